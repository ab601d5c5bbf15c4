"""The image's targets (docs/container.md "Measured"), measured with podman.

Run by tests/image/run.sh (scripts/image.sh test) with LOFT_IMAGE naming the image. Each
check prints one `image: ...` line with its figure and fails (exit 1) when its target is
missed:

- the image is at most 40 MB (40,000,000 bytes);
- its config runs /loft serve as uid 10001 with a HEALTHCHECK and LOFT_* settings;
- `podman run -p 127.0.0.1:P:9324 -v VOL:/data IMAGE` answers a boto3 round trip
  (CreateQueue, SendMessage, ReceiveMessage, DeleteMessage) within 1 s of the container's
  start (its State.StartedAt), also quoted from the `podman run` call;
- it prints `Ready.`, listens on 4566 and answers /_localstack/health in LocalStack's shape;
- the process runs as uid 10001, and `podman healthcheck run` says healthy;
- a message sent before `podman restart` is received after it (SQLite in the volume);
- SIGTERM to exit takes under 2 s, exit status 0.

Every wait is bounded; the container and volume are removed at the end whatever happens.
"""

import datetime
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import boto3
from botocore.config import Config

IMAGE = os.environ.get("LOFT_IMAGE", "loft:latest")
SUFFIX = f"{os.getpid()}"
NAME = f"loft-image-test-{SUFFIX}"
VOLUME = f"loft-image-test-{SUFFIX}"
MAX_SIZE = 40_000_000
START_TARGET = 1.0
STOP_TARGET = 2.0


def podman(*args, timeout=60, check=True):
    """Runs `podman ARGS` (bounded by `timeout` seconds) and returns its stdout."""
    r = subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout
    )
    if check and r.returncode != 0:
        raise SystemExit(
            f"image: podman {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}"
        )
    return r.stdout.strip()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sqs(port):
    return boto3.client(
        "sqs",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(
            connect_timeout=0.2, read_timeout=5, retries={"max_attempts": 1}
        ),
    )


def round_trip(client, queue, body):
    url = client.create_queue(QueueName=queue)["QueueUrl"]
    client.send_message(QueueUrl=url, MessageBody=body)
    got = client.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", [])
    assert [m["Body"] for m in got] == [body], got
    client.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])


def until(what, deadline_s, attempt):
    """Calls `attempt()` until it returns without raising; gives up after `deadline_s`."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            return attempt()
        except Exception as e:  # noqa: BLE001 - any failure means "not yet"
            if time.monotonic() > end:
                raise SystemExit(f"image: {what} did not happen within {deadline_s} s: {e!r}")
            time.sleep(0.01)


def started_at(name):
    """The container's State.StartedAt as a UTC epoch (podman prints nanoseconds)."""
    raw = podman("inspect", name, "--format", "{{.State.StartedAt.UnixNano}}")
    return int(raw) / 1e9


def fail(msg):
    raise SystemExit(f"image: FAILED: {msg}")


def main():
    size = int(podman("image", "inspect", IMAGE, "--format", "{{.Size}}"))
    print(f"image: size {size} bytes ({size / 1e6:.1f} MB; target <= 40 MB)")
    if size > MAX_SIZE:
        fail(f"the image is {size} bytes, over {MAX_SIZE}")

    inspected = json.loads(podman("image", "inspect", IMAGE))[0]
    config, check = inspected["Config"], inspected.get("Healthcheck")
    print(f"image: user {config.get('User')!r}, entrypoint {config.get('Entrypoint')}, "
          f"cmd {config.get('Cmd')}, healthcheck {(check or {}).get('Test')}")
    if config.get("User") != "10001:10001":
        fail("the image does not run as 10001:10001")
    if not (check or {}).get("Test"):
        fail("the image has no HEALTHCHECK")

    podman("volume", "create", VOLUME)
    try:
        run()
    finally:
        podman("rm", "-f", "-v", "-t", "0", NAME, check=False)
        podman("volume", "rm", "-f", VOLUME, check=False)


def run():
    port, edge = free_port(), free_port()
    t0 = time.time()
    podman(
        "run", "-d", "--name", NAME,
        "-p", f"127.0.0.1:{port}:9324", "-p", f"127.0.0.1:{edge}:4566",
        "-v", f"{VOLUME}:/data", IMAGE,
    )
    client = sqs(port)
    until("a boto3 round trip", 10, lambda: round_trip(client, "first", "hello"))
    t1 = time.time()
    from_start = t1 - started_at(NAME)
    print(f"image: boto3 round trip {from_start:.3f} s after the container started "
          f"({t1 - t0:.3f} s after `podman run` was called; target 1 s)")
    if from_start > START_TARGET:
        fail(f"first round trip {from_start:.3f} s after start, over {START_TARGET} s")

    logs = podman("logs", NAME)
    if "Ready." not in logs.splitlines():
        fail(f"no `Ready.` line in the logs:\n{logs}")
    with urllib.request.urlopen(f"http://127.0.0.1:{edge}/_localstack/health", timeout=5) as r:
        health = json.load(r)
    print(f"image: `Ready.` printed; 4566 answers /_localstack/health {json.dumps(health)}")
    if health.get("services", {}).get("sqs") != "running" or \
            health.get("services", {}).get("sns") != "running" or \
            "edition" not in health or "version" not in health:
        fail(f"/_localstack/health is not LocalStack's shape: {health}")

    users = podman("top", NAME, "user", "huser", "args")
    print("image: podman top: " + " | ".join(users.splitlines()))
    rows = users.splitlines()[1:]
    if not rows or any(row.split()[0] != "10001" and row.split()[1] != "10001" for row in rows):
        fail(f"a process of the container does not run as 10001: {users}")

    health_run = subprocess.run(
        ["podman", "healthcheck", "run", NAME], capture_output=True, text=True, timeout=30
    )
    print(f"image: podman healthcheck run -> exit {health_run.returncode} "
          f"{(health_run.stdout + health_run.stderr).strip()!r}")
    if health_run.returncode != 0:
        fail("the health check failed on a running Loft")

    url = client.create_queue(QueueName="survivor")["QueueUrl"]
    client.send_message(QueueUrl=url, MessageBody="kept across a restart")
    t = time.monotonic()
    podman("restart", "-t", "10", NAME, timeout=60)
    got = until(
        "a receive after the restart", 10,
        lambda: client.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"],
    )
    print(f"image: after `podman restart` ({time.monotonic() - t:.3f} s to the receive) "
          f"the message is there: {got[0]['Body']!r}")
    if got[0]["Body"] != "kept across a restart":
        fail(f"after the restart: {got}")

    t = time.monotonic()
    podman("kill", "--signal", "TERM", NAME)
    podman("wait", "--interval", "10ms", NAME, timeout=30)
    by_cli = time.monotonic() - t
    code = podman("inspect", NAME, "--format", "{{.State.ExitCode}}")
    finished = int(podman("inspect", NAME, "--format", "{{.State.FinishedAt.UnixNano}}")) / 1e9
    # SIGTERM to exit: from Loft's log line on receiving it ("shutting down", UTC) to the
    # process's exit as the container runtime recorded it (State.FinishedAt), both on this
    # machine's clock; the podman commands' own start-up is not part of it.
    logs = subprocess.run(["podman", "logs", NAME], capture_output=True, text=True,
                          timeout=30).stderr.splitlines()
    stamps = {}
    for line in logs:
        for event in ("shutting down", "loft stopped"):
            if line.endswith(event):
                stamps[event] = datetime.datetime.fromisoformat(
                    line.split()[0][:26]).replace(tzinfo=datetime.timezone.utc).timestamp()
    if "shutting down" not in stamps:
        fail(f"no `shutting down` line in Loft's log after SIGTERM: {logs[-5:]}")
    stopped = finished - stamps["shutting down"]
    drained = stamps.get("loft stopped", finished) - stamps["shutting down"]
    print(f"image: SIGTERM to exit {stopped:.3f} s (Loft's `shutting down` to the container's "
          f"FinishedAt; {drained:.3f} s of it to Loft's `loft stopped`), exit status {code} "
          f"(target < 2 s); {by_cli:.3f} s from calling `podman kill` to `podman wait` returning")
    if stopped >= STOP_TARGET or code != "0":
        fail(f"SIGTERM to exit took {stopped:.3f} s with status {code}")


if __name__ == "__main__":
    main()
