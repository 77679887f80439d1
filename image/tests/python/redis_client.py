"""Drives a Redis server with the current Python client, redis-py (5 or
later), as an application would: image/tests/python_client.rs runs it
against kvstore under QEMU.

    redis_client.py PORT

For each way of connecting -- the client's default protocol (RESP3 since
redis-py 8; the script fails if the default it gets is not the one it
asserts), protocol=3 asked for explicitly, and protocol=2 -- it checks
strings, hashes, sets and sorted sets (typed replies: maps, sets, doubles),
a pipeline, a transaction (MULTI/EXEC, and WATCH failing it), pub/sub
with a message received, a stream consumer group, and redis-py's Lock
(Lua scripts run with EVALSHA) under contention from four clients. Then
client-side caching (RESP3; redis-py's own cache refuses servers before
7.4, so CLIENT TRACKING is driven on one of its connections): a GET
tracked, the key changed from another connection, the `invalidate` push
received and the new value read; FLUSHDB's nil invalidation. Prints
one line per part and exits non-zero at the first failure (an
AssertionError's traceback says which).
"""

import sys
import threading
import time

import redis


def expect(got, want, what):
    assert got == want, f"{what}: got {got!r}, want {want!r}"


def strings(r):
    expect(r.set("greeting", "hello"), True, "SET")
    expect(r.get("greeting"), b"hello", "GET")
    expect(r.get("missing"), None, "GET of a missing key")
    expect(r.incr("counter"), 1, "INCR")
    expect(r.incrby("counter", 41), 42, "INCRBY")
    expect(r.incrbyfloat("float", 1.5), 1.5, "INCRBYFLOAT")
    expect(r.mget("greeting", "missing", "counter"), [b"hello", None, b"42"], "MGET")
    expect(r.set("greeting", "x", nx=True), None, "SET NX of an existing key")
    expect(r.delete("greeting", "counter", "float"), 3, "DEL")


def typed_replies(r):
    r.delete("h", "s", "z")
    r.hset("h", mapping={"a": "1", "b": "2"})
    expect(r.hgetall("h"), {b"a": b"1", b"b": b"2"}, "HGETALL")
    expect(r.hgetall("missing"), {}, "HGETALL of a missing key")
    r.sadd("s", "x", "y")
    expect(r.smembers("s"), {b"x", b"y"}, "SMEMBERS")
    r.zadd("z", {"one": 1.5, "two": 2})
    expect(r.zscore("z", "one"), 1.5, "ZSCORE")
    expect(r.zscore("z", "missing"), None, "ZSCORE of a missing member")
    expect(r.zincrby("z", 1, "one"), 2.5, "ZINCRBY")
    # Pairs: lists in RESP3, tuples in RESP2 (redis-py's own difference).
    pairs = [tuple(p) for p in r.zrange("z", 0, -1, withscores=True)]
    expect(pairs, [(b"two", 2.0), (b"one", 2.5)], "ZRANGE WITHSCORES")
    expect([tuple(p) for p in r.zpopmin("z", 1)], [(b"two", 2.0)], "ZPOPMIN with a count")
    expect(r.config_get("maxmemory-policy"), {"maxmemory-policy": "noeviction"}, "CONFIG GET")
    info = r.info("server")
    assert str(info["redis_version"]).startswith("7.0."), info["redis_version"]
    r.delete("h", "s", "z")


def pipeline(r):
    with r.pipeline(transaction=False) as p:
        p.set("p1", "a").set("p2", "b").get("p1").mget("p1", "p2").delete("p1", "p2")
        expect(p.execute(), [True, True, b"a", [b"a", b"b"], 2], "pipeline")


def transaction(r, other):
    with r.pipeline(transaction=True) as p:
        p.set("t", "1").incr("t").get("t")
        expect(p.execute(), [True, 2, b"2"], "MULTI/EXEC")
    # WATCH: a change by another client fails the transaction.
    with r.pipeline(transaction=True) as p:
        p.watch("t")
        other.set("t", "changed")
        p.multi()
        p.set("t", "mine")
        try:
            p.execute()
            raise AssertionError("EXEC ran although a watched key changed")
        except redis.WatchError:
            pass
    expect(r.get("t"), b"changed", "the value after the failed transaction")
    r.delete("t")


def pubsub(r, other):
    p = r.pubsub()
    p.subscribe("news")
    p.psubscribe("n*")
    confirmations = [wait_message(p, "a confirmation")["type"] for _ in range(2)]
    expect(sorted(confirmations), ["psubscribe", "subscribe"], "confirmations")
    expect(other.publish("news", "hi"), 2, "PUBLISH receivers")
    got = [wait_message(p, "a published message") for _ in range(2)]
    kinds = sorted((m["type"], m["channel"], m["data"]) for m in got)
    expect(kinds, [("message", b"news", b"hi"), ("pmessage", b"news", b"hi")], "messages")
    p.unsubscribe()
    p.punsubscribe()
    p.close()


def stream_group(r):
    """A stream with a consumer group: entries delivered once to a
    consumer, one acknowledged, the other still pending."""
    r.delete("jobs")
    ids = [r.xadd("jobs", {"n": str(i)}) for i in range(3)]
    expect(r.xgroup_create("jobs", "workers", id="0"), True, "XGROUP CREATE")
    got = r.xreadgroup("workers", "w1", {"jobs": ">"}, count=2)
    # RESP3 gives a map of stream to entries, RESP2 a list of pairs.
    batches = list(got.values()) if isinstance(got, dict) else [v for _, v in got]
    entries = batches[0][0] if isinstance(got, dict) else batches[0]
    expect([e[0] for e in entries], ids[:2], "XREADGROUP: the first two entries")
    expect(entries[0][1], {b"n": b"0"}, "XREADGROUP: the first entry's fields")
    expect(r.xack("jobs", "workers", ids[0]), 1, "XACK")
    expect(r.xpending("jobs", "workers")["pending"], 1, "XPENDING: one left")
    again = r.xreadgroup("workers", "w2", {"jobs": ">"})
    batches = list(again.values()) if isinstance(again, dict) else [v for _, v in again]
    entries = batches[0][0] if isinstance(again, dict) else batches[0]
    expect([e[0] for e in entries], ids[2:], "XREADGROUP: only the undelivered entry")


def lock(port, options):
    """redis-py's Lock (its acquire, extend and release are Lua scripts run
    with EVALSHA): four clients increment a counter under it, and each
    increment lands; a lock held by one client cannot be taken or released
    by another."""
    clients = [
        redis.Redis(host="127.0.0.1", port=port, socket_timeout=30, **options)
        for _ in range(4)
    ]
    clients[0].set("locked-counter", 0)

    def worker(c):
        for _ in range(10):
            with c.lock("resource", timeout=10, blocking_timeout=60, sleep=0.01):
                value = int(c.get("locked-counter"))
                time.sleep(0.002)
                c.set("locked-counter", value + 1)

    threads = [threading.Thread(target=worker, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expect(int(clients[0].get("locked-counter")), 40, "increments made under the lock")
    mine = clients[0].lock("held", timeout=5)
    expect(mine.acquire(blocking=False), True, "Lock.acquire")
    expect(mine.extend(10), True, "Lock.extend")
    ttl = clients[0].pttl("held")
    assert 5000 < ttl <= 15000, f"Lock.extend: PTTL {ttl}"
    theirs = clients[1].lock("held", timeout=5)
    expect(theirs.acquire(blocking=False), False, "another client's Lock.acquire")
    try:
        theirs.release()
        raise AssertionError("another client released a lock it does not hold")
    except redis.exceptions.LockError:
        pass
    expect(mine.owned(), True, "Lock.owned")
    mine.release()
    expect(clients[0].exists("held"), 0, "Lock.release deletes the key")
    expect(theirs.acquire(blocking=False), True, "Lock.acquire once released")
    theirs.release()
    for c in clients:
        c.close()


def client_side_caching(port):
    # redis-py 8's own cache (`cache_config`) refuses servers older than
    # 7.4, and kvstore is 7.0: tracking is driven by hand on one of
    # redis-py's RESP3 connections, its parser handing over the server's
    # `invalidate` pushes as the cache would receive them.
    conn = redis.Connection(host="127.0.0.1", port=port, protocol=3, socket_timeout=30)
    conn.connect()
    pushes = []
    conn._parser.set_invalidation_push_handler(pushes.append)
    writer = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30)
    writer.set("csc:key", "1")

    def call(*args):
        conn.send_command(*args)
        return conn.read_response()

    def wait_push(what):
        deadline = time.monotonic() + 10
        while not pushes:
            assert time.monotonic() < deadline, f"caching: no {what} within 10 s"
            if conn.can_read(timeout=1):
                conn.read_response(push_request=True)
        return pushes.pop(0)

    expect(call("CLIENT", "TRACKING", "ON"), b"OK", "caching: CLIENT TRACKING ON")
    expect(call("GET", "csc:key"), b"1", "caching: the GET a client caches")
    writer.set("csc:key", "2")
    expect(wait_push("invalidation"), [b"invalidate", [b"csc:key"]], "caching: invalidated")
    expect(call("GET", "csc:key"), b"2", "caching: the new value read")
    writer.flushdb()
    expect(wait_push("flush invalidation"), [b"invalidate", None], "caching: FLUSHDB")
    expect(call("PING"), b"PONG", "caching: replies after the pushes")
    conn.disconnect()
    writer.close()


def wait_message(p, what):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        message = p.get_message(timeout=1.0)
        if message is not None:
            return message
    raise AssertionError(f"no {what} within 10 s")


def main():
    port = int(sys.argv[1])
    print(f"redis-py {redis.__version__}")
    for label, options, want in [
        ("default protocol", {}, "3"),
        ("protocol=3", {"protocol": 3}, "3"),
        ("protocol=2", {"protocol": 2}, "2"),
    ]:
        r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30, **options)
        other = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30, **options)
        expect(str(r.client_info()["resp"]), want, f"{label}: the protocol spoken")
        for part in (strings, typed_replies, pipeline):
            part(r)
        transaction(r, other)
        pubsub(r, other)
        stream_group(r)
        lock(port, options)
        print(
            f"{label} (RESP{want}): strings, typed replies, pipeline, transaction, "
            "pub/sub, stream consumer group, Lock: ok"
        )
        r.close()
        other.close()
    client_side_caching(port)
    print("client-side caching (RESP3, CLIENT TRACKING): invalidated on change: ok")


if __name__ == "__main__":
    main()
