#!/usr/bin/env python3
"""Many concurrent SQS long polls from one address, each on its own connection, and what
became of each: answered (by status), closed without an answer, or not connected.

    scripts/long-polls.py LOFT_BINARY [CONNECTIONS [WAIT_SECONDS [SERVE_ARGS...]]]

Starts LOFT_BINARY serve on 127.0.0.1 (a free port, a temporary database, no credentials),
creates an empty queue, opens CONNECTIONS connections at once (default 2000), sends one
ReceiveMessage with WaitTimeSeconds=WAIT_SECONDS (default 20) on each, reads every answer,
prints the counts, and stops the server by its pid. Bounded: every connection gives up
WAIT_SECONDS + 30 s after the start. Raises its own open-files limit (RLIMIT_NOFILE) to
the hard limit; the server raises its own. Measures the "2,000 concurrent long polls
from one address all answered" target (docs/security.md: running behind a load balancer).
"""

import asyncio
import collections
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time

SIGV4 = (
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/us-east-1/sqs/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=00"
)


def request(op, body):
    body = json.dumps(body).encode()
    head = (
        f"POST / HTTP/1.1\r\nHost: loft\r\nX-Amz-Target: AmazonSQS.{op}\r\n"
        f"Content-Type: application/x-amz-json-1.0\r\nAuthorization: {SIGV4}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head + body


async def exchange(port, data, deadline):
    """('answered', status, body) | ('closed',) | ('connect', error) | ('timeout',)."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), max(0.1, deadline - time.monotonic())
        )
    except (OSError, asyncio.TimeoutError) as e:
        return ("connect", type(e).__name__)
    try:
        writer.write(data)
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), max(0.1, deadline - time.monotonic()))
        if not line:
            return ("closed",)
        status = int(line.split()[1])
        # The rest of the answer (head and body), up to the close or the deadline.
        length = None
        while True:
            h = await asyncio.wait_for(reader.readline(), max(0.1, deadline - time.monotonic()))
            if h in (b"\r\n", b""):
                break
            k, _, v = h.decode("latin-1").partition(":")
            if k.strip().lower() == "content-length":
                length = int(v.strip())
        body = b""
        if length:
            body = await asyncio.wait_for(reader.readexactly(length), max(0.1, deadline - time.monotonic()))
        return ("answered", status, body)
    except asyncio.TimeoutError:
        return ("timeout",)
    except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
        return ("closed",)
    finally:
        writer.close()


async def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    wait = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    extra = sys.argv[4:]
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = tempfile.mkdtemp(prefix="loft-long-polls-")
    log = open(os.path.join(tmp, "stderr.log"), "w")
    server = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--db", os.path.join(tmp, "loft.db")]
        + extra,
        stdout=subprocess.DEVNULL,
        stderr=log,
        env={k: v for k, v in os.environ.items() if not k.startswith("LOFT_")},
    )
    try:
        url = None
        for _ in range(300):
            got = await exchange(port, request("CreateQueue", {"QueueName": "polls"}), time.monotonic() + 5)
            if got[:2] == ("answered", 200):
                url = json.loads(got[2])["QueueUrl"]
                break
            # Not listening yet.
            await asyncio.sleep(0.1)
        if url is None:
            sys.exit("the server did not answer CreateQueue")
        body = request("ReceiveMessage", {"QueueUrl": url, "WaitTimeSeconds": wait})
        started = time.monotonic()
        deadline = started + wait + 30
        results = await asyncio.gather(*(exchange(port, body, deadline) for _ in range(n)))
        took = time.monotonic() - started
        counts = collections.Counter(
            " ".join(str(x) for x in r[:2]) for r in results
        )
        print(f"{binary} {' '.join(extra)}: {n} long polls (WaitTimeSeconds={wait}) from 127.0.0.1 in {took:.1f} s")
        for k, v in sorted(counts.items()):
            print(f"  {k}: {v}")
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


asyncio.run(main())
