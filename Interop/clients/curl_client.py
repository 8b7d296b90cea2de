"""curl (HTTP/2 over TLS with --http2; token auth with a JWT from `pushgate keys token`, certificate
auth with --cert). Run with the system python3; needs the curl binary."""
import json
import shutil
import subprocess
import tempfile

from common import MANY, arguments, attempt, expect, report

args = arguments()
results = {}
base = f"https://{args.host}:{args.port}/3/device/"


def curl(token, body, headers=(), certificate=None, urls=1):
    """(status, body) of each request; `urls` > 1 sends that many in parallel on one connection."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as payload:
        payload.write(json.dumps(body))
        payload.flush()
        request = ["-s", "--http2", "--cacert", args.ca, "-w", "\\n@@%{http_code}\\n"]
        if certificate:
            request += ["--cert", certificate]
        else:
            request += ["-H", f"authorization: bearer {args.jwt}"]
        request += ["-H", f"apns-topic: {args.topic}"]
        for header in headers:
            request += ["-H", header]
        request += ["--data-binary", f"@{payload.name}", base + token]
        # Several transfers in one curl: options per transfer (--next), multiplexed on one connection.
        command = ["curl"] + (["--parallel", "--parallel-max", "50"] if urls > 1 else []) + request
        for _ in range(urls - 1):
            command += ["--next"] + request
        output = subprocess.run(command, capture_output=True, text=True, timeout=60).stdout
    # Each answer is its body, then a line "@@<status>".
    answers, body = [], []
    for line in output.split("\n"):
        if line.startswith("@@"):
            answers.append((int(line[2:]), "\n".join(body).strip()))
            body = []
        else:
            body.append(line)
    return answers


def alert():
    [(status, body)] = curl(args.token, {"aps": {"alert": "hello from curl"}})
    expect(status == 200, f"{status} {body}")


def background():
    [(status, body)] = curl(args.token, {"aps": {"content-available": 1}},
                            ["apns-push-type: background", "apns-priority: 5"])
    expect(status == 200, f"{status} {body}")


def bad_token():
    [(status, body)] = curl(args.unknown, {"aps": {"alert": "x"}})
    expect(status == 400 and json.loads(body)["reason"] == "BadDeviceToken", f"{status} {body}")


def unregistered():
    [(status, body)] = curl(args.unregistered, {"aps": {"alert": "x"}})
    answer = json.loads(body)
    expect(status == 410 and answer["reason"] == "Unregistered" and answer["timestamp"], f"{status} {body}")


def certificate():
    [(status, body)] = curl(args.token, {"aps": {"alert": "by certificate"}}, certificate=args.combined)
    expect(status == 200, f"{status} {body}")


def many():
    answers = curl(args.token, {"aps": {"alert": "many"}}, urls=MANY)
    ok = sum(1 for status, _ in answers if status == 200)
    expect(ok == MANY, f"{ok} of {MANY} answered 200")


if shutil.which("curl") is None:
    results = {case: "n/a: no curl" for case in ["alert", "background", "bad_device_token", "unregistered",
                                                   "certificate", "many"]}
else:
    for case, body in [("alert", alert), ("background", background), ("bad_device_token", bad_token),
                       ("unregistered", unregistered), ("certificate", certificate), ("many", many)]:
        attempt(results, case, body)
report(results)
