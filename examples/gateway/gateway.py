#!/usr/bin/env python3
"""A reference inference gateway for neocloud's Model-as-a-Service billing: it fronts an
OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp ...), knows customers by their own
bearer keys, and reports one usage event per request to neocloud's `POST /v1/events`,
where meters turn the tokens into invoice lines and budgets.

    python3 examples/gateway/gateway.py --upstream http://127.0.0.1:8000 \\
        --api https://neocloud.example --keys keys.json --spool gateway.spool

Streamed answers are counted too: the gateway asks the upstream for its usage chunk and,
when none comes, reports an estimate marked as one, never a silent 0.
Python 3.9+, standard library only. See examples/gateway/README.md.
"""

import argparse
import contextlib
import hashlib
import http.client
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 1 << 20          # a customer's request body, at most
UPSTREAM_TIMEOUT_S = 600    # the longest silence the upstream may keep while it answers
DRAIN_S = 5                 # after a client leaves mid-stream: how long to wait for usage
BATCH_MAX = 100             # events per POST /v1/events
BATCH_WAIT_S = 1.0          # how long a batch waits to fill up
MAX_BACKOFF_S = 30
GROUP_MAX_BYTES = 128       # neocloud's limit on a value a meter groups by
ROUTES = ("/v1/chat/completions", "/v1/completions")
DELTAS = ("content", "reasoning_content", "tool_calls")  # what a streamed chunk adds
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # upstream: no proxy


def log(message):
    print(message, file=sys.stderr, flush=True)


def group_text(value):
    """A value neocloud's meters can group by: no control characters, at most 128 bytes
    (cut at a character boundary). Anything else would get the whole event refused."""
    text = "".join(c for c in str(value) if ord(c) >= 32 and not 0x7F <= ord(c) <= 0x9F)
    return text.encode()[:GROUP_MAX_BYTES].decode("utf-8", "ignore")


def digest(secret):
    return hashlib.sha256(secret.encode()).hexdigest()


def load_keys(path):
    """`{"<customer key>": {"tenant": "<tenant id>", "name": "<key name>"}}`, kept by hash."""
    with open(path) as f:
        raw = json.load(f)
    keys = {}
    for secret, who in raw.items():
        if not isinstance(who, dict) or not who.get("tenant"):
            sys.exit(f"{path}: the key starting {secret[:4]!r} names no tenant")
        keys[digest(secret)] = {"tenant": who["tenant"], "name": group_text(who.get("name") or "default")}
    return keys


def estimate(chars):
    """Roughly four characters a token, rounded up."""
    return -(-chars // 4)


def prompt_chars(body):
    """The characters of a chat's messages (their text parts) or of a completion's prompt."""
    contents = [m.get("content") for m in body.get("messages") or [] if isinstance(m, dict)]
    parts = [p for c in contents or [body.get("prompt")] for p in (c if isinstance(c, list) else [c])]
    return sum(len(t) for t in (p.get("text") if isinstance(p, dict) else p for p in parts)
               if isinstance(t, str))


def tokens_of(usage):
    """(input not read from cache, output, cached) from an OpenAI `usage` object, whose
    `prompt_tokens` include the cached ones; None when it has no counts."""
    if not isinstance(usage, dict) or not all(
            isinstance(usage.get(k), int) for k in ("prompt_tokens", "completion_tokens")):
        return None
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else 0
    cached = min(cached, usage["prompt_tokens"]) if isinstance(cached, int) and cached > 0 else 0
    return usage["prompt_tokens"] - cached, usage["completion_tokens"], cached


class Reporter:
    """Sends usage events to neocloud in batches from one background thread. An event is
    appended to the spool (if any) before it is queued and leaves it once neocloud has
    answered for it; until then it is re-sent as it is, same id, so neocloud counts it
    once (it answers `duplicate` for an id it already has)."""

    def __init__(self, args):
        self.url = args.api.rstrip("/") + "/v1/events"
        self.key, self.spool = args.reporter_key, args.spool
        self.queue = queue.Queue()
        self.pending = {}                  # id -> event not yet acknowledged (the spool)
        self.lock = threading.Lock()       # guards `pending` and the spool file
        self.owed = 0                      # requests under way + events not yet sent
        self.done = threading.Condition()  # notified as `owed` goes down

    def start(self):
        if self.spool and os.path.exists(self.spool):
            with open(self.spool) as f:
                for n, line in enumerate(f, 1):
                    try:
                        event = json.loads(line)
                        self.pending[event["id"]] = event
                    except (ValueError, KeyError, TypeError):
                        log(f"{self.spool}:{n}: not an event, skipped")
            for event in self.pending.values():
                self.owe(1)
                self.queue.put(event)
            if self.pending:
                log(f"re-sending {len(self.pending)} events from {self.spool}")
        threading.Thread(target=self.run, daemon=True).start()

    def report(self, event):
        if self.spool:
            with self.lock:
                self.pending[event["id"]] = event
                try:
                    with open(self.spool, "a") as f:
                        f.write(json.dumps(event) + "\n")
                except OSError as e:
                    log(f"{self.spool}: {e}; event {event['id']} is queued, not spooled")
        self.owe(1)
        self.queue.put(event)

    def owe(self, n):
        with self.done:
            self.owed += n
            self.done.notify_all()

    @contextlib.contextmanager
    def answering(self):
        """Around a request, so a stop waits for it (and for the event it reports)."""
        self.owe(1)
        try:
            yield
        finally:
            self.owe(-1)

    def flush(self, timeout):
        """Waits (at most `timeout` s) for every request and event; returns how many are left."""
        with self.done:
            self.done.wait_for(lambda: self.owed == 0, timeout)
            return self.owed

    def run(self):
        while True:
            batch, until = [self.queue.get()], time.monotonic() + BATCH_WAIT_S
            while len(batch) < BATCH_MAX and time.monotonic() < until:
                try:
                    batch.append(self.queue.get(timeout=max(0.0, until - time.monotonic())))
                except queue.Empty:
                    break
            self.deliver(batch)
            self.owe(-len(batch))

    def deliver(self, batch):
        """POSTs the batch until neocloud answers it: network errors, 429 and 5xx are
        retried with exponential backoff; another 4xx leaves the events in the spool."""
        delay = 0.5
        while True:
            try:
                return self.acknowledge(batch, self.post(batch))
            except urllib.error.HTTPError as e:
                if e.code != 429 and e.code < 500:
                    kept = "they stay in the spool" if self.spool else "they are lost (no --spool)"
                    log(f"neocloud refused {len(batch)} events: HTTP {e.code} "
                        f"{e.read()[:300].decode(errors='replace')}; {kept}")
                    return
                why = f"HTTP {e.code}"
            except (OSError, http.client.HTTPException, ValueError, AttributeError, TypeError) as e:
                why = str(e) or type(e).__name__  # unreachable, or not neocloud's answer
            log(f"reporting {len(batch)} events failed ({why}); retrying in {delay:g} s")
            time.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_S)

    def post(self, batch):
        req = urllib.request.Request(self.url, data=json.dumps(batch).encode(), method="POST", headers={
            "content-type": "application/cloudevents-batch+json",
            "authorization": "Bearer " + self.key})
        with urllib.request.urlopen(req, timeout=30) as res:
            return json.load(res)

    def acknowledge(self, batch, answer):
        """One result per event, in order: `accepted` and `duplicate` are done; `invalid`
        will never be accepted as it is, so it is logged and dropped."""
        results = answer.get("results") or []
        counts = {"accepted": 0, "duplicate": 0, "invalid": 0}
        for event, result in zip(batch, results):
            status = result.get("status")
            counts[status] = counts.get(status, 0) + 1
            if status == "invalid":
                error = result.get("error") or {}
                log(f"event {event['id']} refused: {error.get('field')}: {error.get('message')}")
        with self.lock:
            for event in batch[:len(results)]:
                self.pending.pop(event["id"], None)
            if self.spool:  # rewritten whole, then swapped in: a crash leaves one or the other
                with open(self.spool + ".tmp", "w") as f:
                    f.writelines(json.dumps(e) + "\n" for e in self.pending.values())
                os.replace(self.spool + ".tmp", self.spool)
        print(f"reported: {counts['accepted']} accepted, {counts['duplicate']} duplicate, "
              f"{counts['invalid']} invalid", flush=True)


def watch(line, seen):
    """Reads one SSE line of the upstream's stream: counts content deltas (about a token
    each) and keeps the latest `usage`. True for the usage chunk (usage, no choices)."""
    try:
        chunk = json.loads(line[5:]) if line.startswith(b"data:") else {}
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if choice.get("text") or any(delta.get(k) for k in DELTAS):
                seen["deltas"] += 1
        if tokens_of(chunk.get("usage")):
            seen["usage"] = chunk["usage"]
            return not chunk.get("choices")
    except (ValueError, AttributeError):  # `data: [DONE]` (the end), or not OpenAI's shape
        pass
    return False


class Gateway(BaseHTTPRequestHandler):
    """One customer request: authenticate, forward, answer, report. `args`, `keys` and
    `reporter` are set on a subclass by `serve`."""

    protocol_version = "HTTP/1.1"  # keep-alive; streams are sent chunked

    def do_GET(self):
        if self.path.split("?")[0] != "/v1/models":
            return self.fail(404, "not_found", "unknown path " + self.path.split("?")[0])
        res = self.customer() and self.call(None)[0]
        if res:
            with res:
                self.send(res.status, res.headers.get("content-type"), res.read())

    def do_POST(self):
        with self.reporter.answering():
            started = time.monotonic()
            if self.path.split("?")[0] not in ROUTES:
                return self.fail(404, "not_found", "unknown path " + self.path.split("?")[0])
            who = self.customer()
            body = self.body() if who else None
            if body is None:
                return
            label = body.get("user") if isinstance(body.get("user"), str) else None
            label = label or self.headers.get("x-label")
            request = {"who": who, "body": body, "started": started,
                       "label": group_text(label) if label else None}
            if body.get("stream") is True:
                self.stream(request)
            else:
                self.complete(request)

    def customer(self):
        """The key's tenant and name, else a 401 answered."""
        scheme, _, secret = (self.headers.get("authorization") or "").partition(" ")
        who = self.keys.get(digest(secret.strip())) if scheme.lower() == "bearer" else None
        if who is None:
            self.fail(401, "invalid_api_key", "unknown or missing API key (Authorization: Bearer ...)")
        return who

    def body(self):
        """The request's JSON object, else a 400 or 413 answered."""
        try:
            length = int(self.headers.get("content-length") or 0)
        except ValueError:
            length = -1
        if length > MAX_BODY:
            return self.fail(413, "request_too_large", f"the body is over {MAX_BODY} bytes")
        try:
            body = json.loads(self.rfile.read(length)) if length > 0 else None
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return self.fail(400, "invalid_json", "the body must be a JSON object")
        return body

    def call(self, body):
        """(the upstream's response, None); or, when it answers >= 400 or cannot be reached,
        (None, status) with its answer (or a 502) already relayed to the client."""
        headers = {"accept": "application/json, text/event-stream"}
        if body is not None:
            headers["content-type"] = "application/json"
        if self.args.upstream_key:
            headers["authorization"] = "Bearer " + self.args.upstream_key
        req = urllib.request.Request(self.args.upstream + self.path, headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
        try:
            return DIRECT.open(req, timeout=UPSTREAM_TIMEOUT_S), None
        except urllib.error.HTTPError as e:
            with e:
                self.send(e.code, e.headers.get("content-type"), e.read())
            return None, e.code
        except (OSError, http.client.HTTPException) as e:
            self.fail(502, "upstream_unreachable", f"the model server is unreachable: {e}")
            return None, 502

    def complete(self, request):
        """Non-streamed: the upstream's answer unchanged, its `usage` reported."""
        res, failed = self.call(request["body"])
        if failed:  # an error costs what the operator decides; its usage is unknown: 0
            return self.report(request, "error", failed, (0, 0, 0), False)
        with res:
            try:
                status, payload = res.status, res.read()
            except (OSError, http.client.HTTPException) as e:  # cut off mid-answer
                self.fail(502, "upstream_unreachable", f"the model server broke off: {e}")
                return self.report(request, "error", 502, (0, 0, 0), False)
            self.send(status, res.headers.get("content-type"), payload)
        try:
            answer = json.loads(payload)
        except ValueError:
            answer = {}
        answer = answer if isinstance(answer, dict) else {}
        counts = tokens_of(answer.get("usage"))
        if counts is None:  # an upstream that gives no usage: estimate, and say so
            text = sum(len(str((c.get("message") or {}).get("content") or c.get("text") or ""))
                       for c in answer.get("choices") or [] if isinstance(c, dict))
            return self.report(request, "ok", status,
                               (estimate(prompt_chars(request["body"])), estimate(text), 0), True)
        self.report(request, "ok", status, counts, False)

    def stream(self, request):
        """Streamed: asks for the usage chunk, relays the SSE events as they come (the
        usage chunk only to a client that asked for it too)."""
        body = dict(request["body"])
        options = body.get("stream_options") if isinstance(body.get("stream_options"), dict) else {}
        body["stream_options"] = {**options, "include_usage": True}
        res, failed = self.call(body)
        if failed:
            return self.report(request, "error", failed, (0, 0, 0), False)
        with res:
            seen, stayed = self.relay(res, options.get("include_usage") is not True)
        counts = tokens_of(seen["usage"])
        status = "ok" if counts and stayed else "incomplete"
        if counts is None:  # never a silent 0: ~1 token a delta, ~4 characters a token
            counts = (estimate(prompt_chars(request["body"])), seen["deltas"], 0)
        self.report(request, status, res.status, counts, seen["usage"] is None)

    def relay(self, res, hide_usage):
        """Relays each SSE event as one chunk, as it comes; returns what `watch` saw and
        whether the client got it all. A client that leaves does not stop the reading at
        once: the usage chunk may still come within DRAIN_S. Then the connection closes
        and the upstream stops generating (one that goes silent holds on until its
        UPSTREAM_TIMEOUT_S)."""
        self.send_response(res.status)
        self.send_header("content-type", res.headers.get("content-type") or "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        seen, event, left, hidden = {"usage": None, "deltas": 0}, b"", None, False
        try:
            for line in res:
                hidden |= watch(line, seen) and hide_usage
                if left is not None:
                    if seen["usage"] or time.monotonic() - left > DRAIN_S:
                        break
                    continue
                event += line
                if line.strip():  # an SSE event ends with a blank line
                    continue
                try:
                    if not hidden:  # the usage chunk the client did not ask for stays here
                        self.chunk(event)
                except OSError:
                    left, self.close_connection = time.monotonic(), True
                event, hidden = b"", False
        except (OSError, http.client.HTTPException):  # the upstream broke off: so does the answer
            self.close_connection = True
            return seen, False
        if left is None:
            try:
                if event:
                    self.chunk(event)
                self.chunk(b"")  # the last chunk: the end of the answer
            except OSError:
                left = time.monotonic()
        return seen, left is None

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def report(self, request, status, http_status, counts, estimated):
        data = {"model": group_text(request["body"].get("model") or ""),
                "api_key": request["who"]["name"],
                "input_tokens": counts[0], "output_tokens": counts[1], "cached_tokens": counts[2],
                "latency_ms": round((time.monotonic() - request["started"]) * 1000),
                "status": status, "http_status": http_status, "usage_estimated": estimated}
        if request["label"]:
            data["label"] = request["label"]
        if self.args.region:
            data["region"] = self.args.region
        end = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self.reporter.report({
            "specversion": "1.0", "id": str(uuid.uuid4()), "source": self.args.source,
            "type": self.args.type, "subject": request["who"]["tenant"], "time": end,
            "datacontenttype": "application/json", "data": data})

    def send(self, status, kind, payload):
        try:
            self.send_response(status)
            self.send_header("content-type", kind or "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            self.close_connection = True  # the client left; the usage is reported all the same

    def fail(self, status, code, message):
        """An OpenAI-style error. The connection closes: the body may be left unread."""
        self.close_connection = True
        kind = "invalid_request_error" if status < 500 else "upstream_error"
        body = {"error": {"message": message, "type": kind, "code": code}}
        self.send(status, "application/json", json.dumps(body).encode())

    def log_message(self, *_):
        pass


def serve(args):
    reporter = Reporter(args)
    handler = type("Handler", (Gateway,), {"args": args, "keys": load_keys(args.keys),
                                           "reporter": reporter})
    host, _, port = args.listen.rpartition(":")
    server = ThreadingHTTPServer((host, int(port)), handler)
    print(f"listening on http://{host}:{server.server_port}", flush=True)
    reporter.start()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM stops as Ctrl-C does
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    # Stop: no new connections; the requests under way finish, then the queue is sent,
    # all within --grace seconds. What is left stays in the spool for the next start.
    server.server_close()
    left = reporter.flush(args.grace)
    if left:
        log(f"stopping with {left} requests or events unreported"
            + (" (events are kept in the spool)" if args.spool else ""))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", default="127.0.0.1:8080", help="host:port (port 0: any)")
    p.add_argument("--upstream", required=True, help="the OpenAI-compatible server's base URL")
    p.add_argument("--upstream-key", default=os.environ.get("UPSTREAM_API_KEY"),
                   help="its API key, if it wants one (env UPSTREAM_API_KEY)")
    p.add_argument("--api", required=True, help="neocloud's base URL")
    p.add_argument("--reporter-key", default=os.environ.get("NEOCLOUD_REPORTER_KEY"),
                   help="an operator-wide USAGE_REPORTER key (env NEOCLOUD_REPORTER_KEY)")
    p.add_argument("--keys", required=True, help="JSON file: customer key -> {tenant, name}")
    p.add_argument("--source", default="gateway/" + socket.gethostname(),
                   help="the events' CloudEvents source (default gateway/<hostname>)")
    p.add_argument("--region", help="the region it serves, as model offerings name it")
    p.add_argument("--type", default="model.request",
                   help="the events' CloudEvents type (default model.request)")
    p.add_argument("--spool", help="JSONL file of events not yet acknowledged, re-sent at start")
    p.add_argument("--grace", type=float, default=10, help="seconds a stop waits to report")
    args = p.parse_args()
    if not args.reporter_key:
        p.error("--reporter-key (or NEOCLOUD_REPORTER_KEY) is required")
    args.upstream = args.upstream.rstrip("/").removesuffix("/v1")
    serve(args)


if __name__ == "__main__":
    sys.exit(main())
