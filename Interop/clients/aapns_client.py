"""aapns (asyncio; certificate auth only, from one PEM file holding certificate and key). It adds an
alert to every notification, so its background pushes are background pushes with an alert (accepted
by APNs and by Pushgate, with the mismatch recorded)."""
import asyncio

from aapns.api import Server
from aapns.config import Priority
from aapns.errors import BadDeviceToken, Unregistered
from aapns.models import Alert, Notification, PushType

from common import MANY, arguments, attempt_async, report


async def main():
    args = arguments()
    client = await Server(client_cert_path=args.combined, host=args.host, port=int(args.port), ca_file=args.ca).create_client()
    results = {}

    async def alert():
        await client.send_notification(args.token, Notification(alert=Alert(body="hello from aapns")), topic=args.topic)

    async def background():
        await client.send_notification(
            args.token, Notification(alert=Alert(body="refresh"), push_type=PushType.background), topic=args.topic,
            priority=Priority.normal)

    async def bad_token():
        try:
            await client.send_notification(args.unknown, Notification(alert=Alert(body="x")), topic=args.topic)
        except BadDeviceToken:
            return
        raise AssertionError("no BadDeviceToken")

    async def unregistered():
        try:
            await client.send_notification(args.unregistered, Notification(alert=Alert(body="x")), topic=args.topic)
        except Unregistered:
            return
        raise AssertionError("no Unregistered")

    async def many():
        await asyncio.gather(*[
            client.send_notification(args.token, Notification(alert=Alert(body=f"#{i}")), topic=args.topic)
            for i in range(MANY)])

    for case, body in [("alert", alert), ("background", background), ("bad_device_token", bad_token),
                       ("unregistered", unregistered), ("many", many)]:
        await attempt_async(results, case, body)
    results["certificate"] = "ok (its only authentication)" if results.get("alert") == "ok" else results.get("alert")
    await client.close()
    report(results)


asyncio.run(main())
