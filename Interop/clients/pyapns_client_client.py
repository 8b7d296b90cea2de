"""pyapns_client (httpx; token auth only, iat as a float). Its base URLs are a class table."""
from pyapns_client import APNSClient, IOSNotification, IOSPayload, IOSPayloadAlert
from pyapns_client import exceptions

from common import MANY, arguments, attempt, expect, report

args = arguments()
APNSClient.BASE_URLS[APNSClient.MODE_DEV] = f"https://{args.host}:{args.port}"
client = APNSClient(mode=APNSClient.MODE_DEV, root_cert_path=args.ca, auth_key_path=args.key,
                    auth_key_id=args.key_id, team_id=args.team_id)
results = {}


def alert_to(token, text="hello from pyapns_client"):
    notification = IOSNotification(payload=IOSPayload(alert=IOSPayloadAlert(body=text)), topic=args.topic)
    client.push(notification=notification, device_token=token)


def background():
    notification = IOSNotification(payload=IOSPayload(content_available=True), topic=args.topic, priority="5",
                                   push_type="background")
    client.push(notification=notification, device_token=args.token)


def bad_token():
    try:
        alert_to(args.unknown)
    except exceptions.BadDeviceTokenException:
        return
    raise AssertionError("no BadDeviceToken")


def unregistered():
    try:
        alert_to(args.unregistered)
    except exceptions.UnregisteredException as error:
        expect(error.timestamp, "no timestamp")
        return
    raise AssertionError("no Unregistered")


def many():
    for i in range(MANY):
        alert_to(args.token, f"#{i}")


attempt(results, "alert", lambda: alert_to(args.token))
attempt(results, "background", background)
attempt(results, "bad_device_token", bad_token)
attempt(results, "unregistered", unregistered)
results["certificate"] = "n/a: token auth only"
attempt(results, "many", many)
client.close()
report(results)
