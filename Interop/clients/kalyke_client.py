"""kalyke-apns (httpx2; token auth with iat as a string; VoIP by certificate). Its base URL is a
property: a subclass points it at the gateway; SSL_CERT_FILE makes it trust the gateway's CA."""
import asyncio
import os

from common import MANY, arguments, attempt_async, expect, report

args = arguments()
os.environ["SSL_CERT_FILE"] = args.ca

from kalyke import ApnsClient, ApnsConfig, Payload, PayloadAlert  # noqa: E402
from kalyke import exceptions  # noqa: E402
from kalyke.clients.voip_certificate import VoIPCertificateClient  # noqa: E402
from kalyke.models import ApnsPriority, ApnsPushType, VoIPApnsConfig  # noqa: E402

BASE = f"https://{args.host}:{args.port}"


class LocalApnsClient(ApnsClient):
    @property
    def _base_url(self):
        return BASE


class LocalVoIPCertificateClient(VoIPCertificateClient):
    @property
    def _base_url(self):
        return BASE


async def main():
    client = LocalApnsClient(use_sandbox=True, team_id=args.team_id, auth_key_id=args.key_id, auth_key_filepath=args.key)
    config = ApnsConfig(topic=args.topic)
    results = {}

    async def alert():
        await client.send_message(args.token, Payload(alert=PayloadAlert(title="kalyke", body="hello")), config)

    async def background():
        await client.send_message(
            args.token, Payload(content_available=True),
            ApnsConfig(topic=args.topic, push_type=ApnsPushType.BACKGROUND, priority=ApnsPriority.BASED_ON_POWER))

    async def bad_token():
        try:
            await client.send_message(args.unknown, Payload(alert="x"), config)
        except exceptions.BadDeviceToken:
            return
        raise AssertionError("no BadDeviceToken")

    async def unregistered():
        try:
            await client.send_message(args.unregistered, Payload(alert="x"), config)
        except exceptions.Unregistered as error:
            expect(error.error.get("timestamp"), f"no timestamp in {error.error}")
            return
        raise AssertionError("no Unregistered")

    async def certificate():
        voip = LocalVoIPCertificateClient(use_sandbox=True, auth_key_filepath=args.combined)
        await voip.send_message(args.token, {"caller": "kalyke"}, VoIPApnsConfig(topic=args.topic + ".voip"))

    async def many():
        for i in range(MANY):
            await client.send_message(args.token, Payload(alert=f"#{i}"), config)

    for case, body in [("alert", alert), ("background", background), ("bad_device_token", bad_token),
                       ("unregistered", unregistered), ("certificate", certificate), ("many", many)]:
        await attempt_async(results, case, body)
    report(results)


asyncio.run(main())
