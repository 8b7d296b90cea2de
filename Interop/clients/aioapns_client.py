"""aioapns (asyncio; token and certificate auth). Its server is a class attribute: pointed at the gateway."""
import asyncio
import ssl

from aioapns import APNs, NotificationRequest, PushType
from aioapns import connection

from common import MANY, arguments, attempt_async, expect, report


async def main():
    args = arguments()
    connection.APNsDevelopmentClientProtocol.APNS_SERVER = args.host
    connection.APNsDevelopmentClientProtocol.APNS_PORT = int(args.port)
    context = ssl.create_default_context(cafile=args.ca)
    with open(args.key) as file:
        key = file.read()
    client = APNs(key=key, key_id=args.key_id, team_id=args.team_id, topic=args.topic, use_sandbox=True,
                  ssl_context=context)
    results = {}

    async def send(token, message, push_type=PushType.ALERT, priority=None, on=client):
        return await on.send_notification(NotificationRequest(
            device_token=token, message=message, push_type=push_type, priority=priority))

    async def alert():
        result = await send(args.token, {"aps": {"alert": "hello from aioapns"}})
        expect(result.is_successful, f"{result.status} {result.description}")

    async def background():
        result = await send(args.token, {"aps": {"content-available": 1}}, PushType.BACKGROUND, 5)
        expect(result.is_successful, f"{result.status} {result.description}")

    async def bad_token():
        result = await send(args.unknown, {"aps": {"alert": "x"}})
        expect(result.status == "400" and result.description == "BadDeviceToken", f"{result.status} {result.description}")

    async def unregistered():
        result = await send(args.unregistered, {"aps": {"alert": "x"}})
        expect(result.status == "410" and result.description == "Unregistered" and result.timestamp,
               f"{result.status} {result.description} {result.timestamp}")

    async def certificate():
        # No topic given: aioapns reads it from the certificate's UID, as with Apple's certificates.
        by_certificate = APNs(client_cert=args.combined, use_sandbox=True, ssl_context=ssl.create_default_context(cafile=args.ca))
        result = await send(args.token, {"aps": {"alert": "by certificate"}}, on=by_certificate)
        by_certificate.pool.close()
        expect(result.is_successful, f"{result.status} {result.description}")

    async def many():
        results_ = await asyncio.gather(*[send(args.token, {"aps": {"alert": f"#{i}"}}) for i in range(MANY)])
        ok = sum(1 for result in results_ if result.is_successful)
        expect(ok == MANY, f"{ok} of {MANY} accepted")

    for case, body in [("alert", alert), ("background", background), ("bad_device_token", bad_token),
                       ("unregistered", unregistered), ("certificate", certificate), ("many", many)]:
        await attempt_async(results, case, body)
    client.pool.close()
    report(results)


asyncio.run(main())
