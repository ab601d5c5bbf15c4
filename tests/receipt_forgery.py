#!/usr/bin/env python3
"""A forgery run against Loft's receipt handles.

Usage: receipt_forgery.py --endpoint http://127.0.0.1:PORT [--attempts 10000] [--seconds 90]

Start a server first, e.g. `target/debug/loft serve --listen 127.0.0.1:0 --db /tmp/x.db`.
Creates a standard queue, a FIFO queue and another standard queue under a per-run prefix,
sends messages to each, receives some of them (so genuine handles exist and messages are
in flight), leaves others never received, then makes --attempts forged or mutated handles
and uses each in DeleteMessage, ChangeMessageVisibility, DeleteMessageBatch or
ChangeMessageVisibilityBatch (in turn) over the SQS JSON protocol:

  random      random bytes of a genuine handle's length, starting with its format byte
  bitflip     a genuine handle with one random bit flipped
  seq         a genuine handle with its seq changed (version 2 handles, which show it)
              or a byte of its sealed fields changed (version 3), its MAC or tag kept
  truncated   a genuine handle cut short
  otherqueue  a genuine handle of another queue (valid MAC, wrong queue)
  legacy      old-format guesses base64("{queue}:{seq}:{token}"), token 0, 1 or random,
              for queue ids and seqs the genuine handles show (version 2) or small ones
              guessed (version 3 handles show none)
  text        random base64url text of random length

Every answer must be AWS's ReceiptHandleIsInvalid (HTTP 400, `The input receipt handle "X"
is not a valid receipt handle.`; in a batch, that entry's error) and nothing else: an
answer that accepts a handle counts as accepted, any other answer as an existence answer
(it differs from the one every made-up handle gets, so it could tell something about the
message it names). FIFO deletes answered RequestThrottled (the queue's throughput quota,
charged before the handle is read) are counted apart, as no attempt. Afterwards the
queues' counts must be as before. Prints
`forgery: N attempts, A accepted, E existence answers` and exits non-zero unless A and E are
0 and the counts held. Bounded by --attempts and --seconds.

Sources: SQS API Reference, DeleteMessage, ChangeMessageVisibility (ReceiptHandleIsInvalid).
"""

import argparse
import base64
import http.client
import json
import random
import sys
import time
import urllib.parse
import uuid


class Sqs:
    """SQS JSON 1.0 calls on one keep-alive connection."""

    def __init__(self, endpoint):
        u = urllib.parse.urlparse(endpoint)
        self.host, self.port = u.hostname, u.port or 80
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)

    def call(self, op, body):
        data = json.dumps(body)
        headers = {
            "X-Amz-Target": f"AmazonSQS.{op}",
            "Content-Type": "application/x-amz-json-1.0",
        }
        for attempt in range(2):
            try:
                self.conn.request("POST", "/", data, headers)
                resp = self.conn.getresponse()
                text = resp.read().decode()
                return resp.status, dict(resp.getheaders()), json.loads(text) if text else {}
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                if attempt:
                    raise

    def ok(self, op, body):
        status, _, out = self.call(op, body)
        if status != 200:
            raise RuntimeError(f"{op}: HTTP {status}: {out}")
        return out


def b64url(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def unb64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def counts(sqs, url):
    a = sqs.ok("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})["Attributes"]
    return (
        a["ApproximateNumberOfMessages"],
        a["ApproximateNumberOfMessagesNotVisible"],
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--attempts", type=int, default=10000)
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sqs = Sqs(args.endpoint)
    prefix = f"forge-{uuid.uuid4().hex[:8]}"

    queues = {}
    for kind in ["std", "fifo", "other"]:
        name = f"{prefix}-{kind}" + (".fifo" if kind == "fifo" else "")
        attrs = {"FifoQueue": "true", "ContentBasedDeduplication": "true"} if kind == "fifo" else {}
        url = sqs.ok("CreateQueue", {"QueueName": name, "Attributes": attrs})["QueueUrl"]
        queues[kind] = url
        for i in range(20):
            body = {"QueueUrl": url, "MessageBody": f"{kind} {i}"}
            if kind == "fifo":
                body["MessageGroupId"] = f"g{i % 10}"
            sqs.ok("SendMessage", body)

    # Genuine handles: half of each standard queue, and one per FIFO group, in flight.
    genuine = {}
    for kind, url in queues.items():
        got = []
        while len(got) < 10:
            out = sqs.ok(
                "ReceiveMessage",
                {"QueueUrl": url, "MaxNumberOfMessages": 10, "VisibilityTimeout": 3600},
            )
            msgs = out.get("Messages", [])
            if not msgs:
                break
            got += [m["ReceiptHandle"] for m in msgs]
        genuine[kind] = got[:10]
    before = {k: counts(sqs, u) for k, u in queues.items()}

    # What the handles name: queue ids and seqs seen in genuine version 2 handles; a
    # version 3 handle seals them, so the guesses are small numbers, as a store's are.
    named = [unb64url(h) for hs in genuine.values() for h in hs]
    version = named[0][0]
    if version == 2:
        queue_ids = sorted({int.from_bytes(b[1:9], "big") for b in named})
        seqs = sorted({int.from_bytes(b[9:17], "big") for b in named})
    else:
        queue_ids = list(range(1, 65))
        seqs = [1, 5000]
    lo, hi = min(seqs), max(seqs) + 40

    def forge(kind, target):
        own = genuine[target]
        if kind == "random":
            return b64url(bytes([version]) + rng.randbytes(len(named[0]) - 1))
        if kind == "bitflip":
            b = bytearray(unb64url(rng.choice(own)))
            bit = rng.randrange(len(b) * 8)
            b[bit // 8] ^= 1 << (bit % 8)
            return b64url(bytes(b))
        if kind == "seq" and version != 2:
            b = bytearray(unb64url(rng.choice(own)))
            at = rng.randrange(13, 37)
            b[at] ^= rng.randrange(1, 256)
            return b64url(bytes(b))
        if kind == "seq":
            b = bytearray(unb64url(rng.choice(own)))
            seq = int.from_bytes(b[9:17], "big")
            other = seq
            while other == seq:
                other = rng.randrange(max(1, lo - 5), hi + 5)
            b[9:17] = other.to_bytes(8, "big")
            return b64url(bytes(b))
        if kind == "truncated":
            h = rng.choice(own)
            return h[: rng.randrange(4, len(h))]
        if kind == "otherqueue":
            return rng.choice(genuine["other"])
        if kind == "legacy":
            q = rng.choice(queue_ids + [max(queue_ids) + 1])
            s = rng.randrange(lo - 5, hi + 50)
            t = rng.choice([0, 1, rng.randrange(1, 2**63)])
            return b64url(f"{q}:{s}:{t}".encode())
        n = rng.randrange(8, 80)
        return b64url(rng.randbytes(n))[:n]

    kinds = ["random", "bitflip", "seq", "truncated", "otherqueue", "legacy", "text"]
    ops = ["DeleteMessage", "ChangeMessageVisibility", "DeleteMessageBatch",
           "ChangeMessageVisibilityBatch"]
    attempts = accepted = existence = throttled = calls = 0
    examples = []
    started = time.monotonic()
    while attempts < args.attempts and time.monotonic() - started < args.seconds:
        target = rng.choice(["std", "fifo"])
        url = queues[target]
        h = forge(kinds[calls % len(kinds)], target)
        op = ops[(calls // len(kinds)) % len(ops)]
        calls += 1
        vt = rng.choice([0, 43200])
        if op == "DeleteMessage":
            body = {"QueueUrl": url, "ReceiptHandle": h}
        elif op == "ChangeMessageVisibility":
            body = {"QueueUrl": url, "ReceiptHandle": h, "VisibilityTimeout": vt}
        elif op == "DeleteMessageBatch":
            body = {"QueueUrl": url, "Entries": [{"Id": "e", "ReceiptHandle": h}]}
        else:
            body = {"QueueUrl": url,
                    "Entries": [{"Id": "e", "ReceiptHandle": h, "VisibilityTimeout": vt}]}
        status, headers, out = sqs.call(op, body)
        message = f'The input receipt handle "{h}" is not a valid receipt handle.'
        if op.endswith("Batch"):
            failed = out.get("Failed") or []
            if status == 200 and out.get("Successful"):
                verdict = "accepted"
            elif (status == 200 and len(failed) == 1
                  and failed[0].get("Code") == "ReceiptHandleIsInvalid"
                  and failed[0].get("Message") == message
                  and failed[0].get("SenderFault") is True):
                verdict = "invalid"
            elif out.get("__type", "").endswith("#RequestThrottled"):
                verdict = "throttled"
            else:
                verdict = "other"
        else:
            query_error = headers.get("x-amzn-query-error", "")
            if status == 200:
                verdict = "accepted"
            elif (status == 400 and query_error == "ReceiptHandleIsInvalid;Sender"
                  and out.get("__type", "").endswith("#ReceiptHandleIsInvalid")
                  and out.get("message", out.get("Message")) == message):
                verdict = "invalid"
            elif out.get("__type", "").endswith("#RequestThrottled"):
                verdict = "throttled"
            else:
                verdict = "other"
        # A throttled call read no handle: it is no attempt, the next one is made anew.
        if verdict != "throttled":
            attempts += 1
        if verdict == "accepted":
            accepted += 1
        elif verdict == "other":
            existence += 1
        elif verdict == "throttled":
            throttled += 1
        if verdict in ("accepted", "other") and len(examples) < 5:
            examples.append((op, target, h, status, out))
    elapsed = time.monotonic() - started

    after = {k: counts(sqs, u) for k, u in queues.items()}
    held = before == after
    for k, u in queues.items():
        sqs.call("DeleteQueue", {"QueueUrl": u})
    for e in examples:
        print("  unexpected answer:", e, file=sys.stderr)
    if not held:
        print(f"  queue counts changed: before {before}, after {after}", file=sys.stderr)
    print(f"  {elapsed:.1f} s, {throttled} throttled (FIFO quota)", file=sys.stderr)
    print(f"forgery: {attempts} attempts, {accepted} accepted, {existence} existence answers")
    sys.exit(0 if accepted == 0 and existence == 0 and held and attempts == args.attempts else 1)


if __name__ == "__main__":
    main()
