"""PyAPNs2 (`apns2`, on hyper; token and certificate auth). hyper predates Python 3.10: the usual
collections shim. Its servers are class attributes; hyper's CA bundle is a module attribute."""
import collections
import collections.abc

for name in ("Iterable", "Mapping", "MutableMapping", "MutableSet", "Callable"):
    setattr(collections, name, getattr(collections.abc, name))

import hyper.tls  # noqa: E402
from apns2.client import APNsClient, NotificationPriority, NotificationType  # noqa: E402
from apns2.credentials import CertificateCredentials, TokenCredentials  # noqa: E402
from apns2.errors import BadDeviceToken, Unregistered  # noqa: E402
from apns2.payload import Payload  # noqa: E402

from common import MANY, arguments, attempt, expect, report  # noqa: E402

args = arguments()
hyper.tls.cert_loc = args.ca
APNsClient.SANDBOX_SERVER = args.host
APNsClient.DEFAULT_PORT = int(args.port)
client = APNsClient(TokenCredentials(args.key, args.key_id, args.team_id), use_sandbox=True)
results = {}


def alert():
    client.send_notification(args.token, Payload(alert="hello from apns2"), topic=args.topic)


def background():
    stream = client.send_notification_async(
        args.token, Payload(content_available=True), topic=args.topic, priority=NotificationPriority.Delayed,
        push_type=NotificationType.Background)
    result = client.get_notification_result(stream)
    expect(result == "Success", f"{result}")


def bad_token():
    try:
        client.send_notification(args.unknown, Payload(alert="x"), topic=args.topic)
    except BadDeviceToken:
        return
    raise AssertionError("no BadDeviceToken")


def unregistered():
    try:
        client.send_notification(args.unregistered, Payload(alert="x"), topic=args.topic)
    except Unregistered as error:
        expect(error.timestamp, "no timestamp")
        return
    raise AssertionError("no Unregistered")


def certificate():
    by_certificate = APNsClient(CertificateCredentials(args.combined), use_sandbox=True)
    by_certificate.send_notification(args.token, Payload(alert="by certificate"), topic=args.topic)


def many():
    # Many streams in flight on its one connection, then every answer.
    streams = [client.send_notification_async(args.token, Payload(alert=f"#{i}"), topic=args.topic) for i in range(MANY)]
    answers = [client.get_notification_result(stream) for stream in streams]
    ok = sum(1 for answer in answers if answer == "Success")
    expect(ok == MANY, f"{ok} of {MANY} accepted: {set(map(str, answers))}")


attempt(results, "alert", alert)
attempt(results, "background", background)
attempt(results, "bad_device_token", bad_token)
attempt(results, "unregistered", unregistered)
attempt(results, "certificate", certificate)
attempt(results, "many", many)
report(results)
