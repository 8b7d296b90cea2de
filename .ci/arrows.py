#!/usr/bin/env python3
"""The module arrows and imports, checked from the manifest (`swift package dump-package`) and the sources,
wherever the modules live (Sources/<side>/<module>). Exits non-zero with one line per finding.

1. Sides: Shared imports neither side; the gateway imports nothing of the simulator; the simulator takes
   from the gateway only its pure machines (PushPolicy and GatewayCore, run in virtual time by the
   forecast) and the provider token signer (ProviderAuth, as every APNs client signs).
2. The pure machines (PushModel, PushPolicy, GatewayCore, DeviceRuntime, Forecast) import no NIO and no Foundation, and
   read no clock: their time is passed in, so they run on the wall clock and in virtual time alike.
3. The layers inside the gateway: model -> policy -> hub/provider -> gateway -> executable.
4. Each target imports exactly what it declares (no undeclared module, no declared one unused).
5. The executable only parses and prints: no target imports it (the tests take what they test from the
   libraries), and libnghttp2's declarations (CNGHTTP2) are imported only by the provider API's codec: the
   files of its room (Sources/Gateway/ProviderAPI/HTTP2Codec/) and the provider API's tests.

Usage: python3 .ci/arrows.py  (from the repository; .ci/run runs it)
"""
import glob
import json
import re
import subprocess
import sys

SIDES_ALLOWED = {
    ("Simulator", "Gateway"): {"PushPolicy", "GatewayCore", "ProviderAuth"},
}
PURE = {"PushModel", "PushPolicy", "GatewayCore", "DeviceRuntime", "Forecast"}
IMPURE_IMPORTS = re.compile(r"^(NIO\w*|Foundation|FoundationEssentials|Dispatch)$")
CLOCK = re.compile(r"Date\(\)|\.now\b|ContinuousClock|SuspendingClock|DispatchTime|clock_gettime")
# (module, modules it must not import): the gateway's layers.
FORBIDDEN = {
    "PushModel": {"PushPolicy", "PushStore", "DeviceHub", "ProviderAPI", "Gateway"},
    "PushPolicy": {"GatewayCore", "PushStore", "DeviceHub", "ProviderAPI", "Gateway"},
    "GatewayCore": {"PushStore", "DeviceHub", "ProviderAPI", "Gateway"},
    "DeviceHub": {"ProviderAPI", "Gateway", "AdminAPI"},
    "ProviderAPI": {"DeviceHub", "Gateway", "PushStore", "AdminAPI"},
    "PushStore": {"DeviceHub", "ProviderAPI", "Gateway", "AdminAPI"},
    "AdminAPI": {"Gateway", "ProviderAPI"},
    "NodeLinks": {"DeviceHub", "ProviderAPI", "Gateway", "PushStore", "AdminAPI"},
}
# Who may import libnghttp2's declarations: the provider API, whose codec is its one user (the files of the
# codec's room only), and its tests.
CNGHTTP2_USERS = {"ProviderAPI", "ProviderAPITests"}
CODEC_ROOM = "Sources/Gateway/ProviderAPI/HTTP2Codec/"
# Modules every target may import without declaring them (the toolchain's).
SYSTEM = {"Foundation", "FoundationEssentials", "Dispatch", "Glibc", "Musl", "Darwin", "Synchronization",
          "Testing", "XCTest", "_Concurrency", "Observation"}
# Products whose module has another name.
PRODUCT_MODULES = {"SQLiteNIO": {"VaporCSQLite", "SQLiteNIO"}}


def main() -> int:
    package = json.loads(subprocess.check_output(["swift", "package", "dump-package"]))
    targets = {}
    for target in package["targets"]:
        path = target.get("path") or ("Tests/" if target["type"] == "test" else "Sources/") + target["name"]
        targets[target["name"]] = (target, path)
    side = {}
    for name, (target, path) in targets.items():
        parts = path.split("/")
        if parts[0] == "Sources" and len(parts) == 3:
            side[name] = parts[1]
    findings = []
    for name, (target, path) in targets.items():
        imports = {}
        files = glob.glob(path + "/**/*.swift", recursive=True)
        for file in files:
            with open(file, encoding="utf-8") as handle:
                text = handle.read()
            for match in re.finditer(r"^(?:@testable |@_exported |public |internal |package )?import (?:struct |enum |class |func )?(\w+)", text, re.M):
                imports.setdefault(match.group(1), file)
                if match.group(1) == "CNGHTTP2" and name == "ProviderAPI" and not file.startswith(CODEC_ROOM):
                    findings.append(f"{file}: imports CNGHTTP2 outside the codec's room ({CODEC_ROOM})")
            if name in PURE:
                for number, line in enumerate(text.splitlines(), 1):
                    if CLOCK.search(line) and "// clock-ok" not in line:
                        findings.append(f"{file}:{number}: {name} reads a clock (its time must be passed in)")
        mine = side.get(name)
        for module, file in sorted(imports.items()):
            if module in targets and targets[module][0]["type"] == "executable":
                findings.append(f"{file}: {name} imports the executable {module}: take what it needs from a library")
            if module == "CNGHTTP2" and name not in CNGHTTP2_USERS:
                findings.append(f"{file}: {name} imports CNGHTTP2, which only the codec's module may")
            theirs = side.get(module)
            if mine and theirs and mine != theirs:
                allowed = SIDES_ALLOWED.get((mine, theirs), set())
                if mine == "Shared" or (theirs != "Shared" and module not in allowed):
                    findings.append(f"{file}: {name} ({mine}) imports {module} ({theirs}): an arrow across sides")
            if module in FORBIDDEN.get(name, set()):
                findings.append(f"{file}: {name} imports {module}: an arrow the wrong way")
            if name in PURE and IMPURE_IMPORTS.match(module):
                findings.append(f"{file}: {name} imports {module}: a pure machine does no I/O")
        # What the target declares: each dependency's module names.
        declared = []
        for dependency in target["dependencies"]:
            value = next(iter(dependency.values()))
            declared.append((value[0], PRODUCT_MODULES.get(value[0], {value[0]})))
        used = set(imports) - SYSTEM - {name}
        for module in sorted(used - set().union(*[modules for _, modules in declared])):
            findings.append(f"{imports[module]}: {name} imports {module}, which Package.swift does not declare")
        for dependency, modules in declared:
            if not modules & used:
                findings.append(f"Package.swift: {name} declares {dependency} and imports it nowhere")
    for finding in findings:
        print(finding)
    if findings:
        print(f"arrows.py: {len(findings)} finding(s)", file=sys.stderr)
        return 1
    print(f"arrows.py: {len(targets)} targets, every arrow and import as declared")
    return 0


if __name__ == "__main__":
    sys.exit(main())
