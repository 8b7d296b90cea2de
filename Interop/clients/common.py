"""What every interop driver shares: the gateway's coordinates from the command line, the cases, and
the JSON line the suite reads (case -> "ok", "n/a: why" or "fail: what happened")."""
import argparse
import json
import sys
import traceback

CASES = ["alert", "background", "bad_device_token", "unregistered", "certificate", "many"]
MANY = 200


def arguments():
    parser = argparse.ArgumentParser()
    for name in ["host", "port", "ca", "key", "key_id", "team_id", "topic", "token", "unregistered",
                 "unknown", "certificate", "combined", "jwt"]:
        parser.add_argument("--" + name.replace("_", "-"), required=True)
    return parser.parse_args()


def report(results):
    """Prints one JSON object: every case, with what happened."""
    print(json.dumps({case: results.get(case, "n/a: not run") for case in CASES}))


def attempt(results, case, body):
    """Runs one case; an exception is its failure, described in one line."""
    try:
        outcome = body()
        results[case] = outcome if isinstance(outcome, str) else "ok"
    except Exception as error:  # noqa: BLE001 - every failure is reported, none stops the others
        detail = f"{type(error).__name__}: {error}".replace("\n", " ")[:300]
        results[case] = "fail: " + detail
        traceback.print_exc(file=sys.stderr)


async def attempt_async(results, case, body):
    try:
        outcome = await body()
        results[case] = outcome if isinstance(outcome, str) else "ok"
    except Exception as error:  # noqa: BLE001
        detail = f"{type(error).__name__}: {error}".replace("\n", " ")[:300]
        results[case] = "fail: " + detail
        traceback.print_exc(file=sys.stderr)


def expect(condition, what):
    if not condition:
        raise AssertionError(what)
