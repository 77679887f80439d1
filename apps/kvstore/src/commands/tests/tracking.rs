//! Client-side caching (`CLIENT TRACKING`) end to end: sessions fed as the
//! server feeds them, the invalidations handed over as the server hands
//! them, and the bytes compared with what redis-server 7.0.15 sends.

use alloc::vec::Vec;

use super::Engine;
use crate::config::Config;
use crate::session::{Logged, Session};

/// An engine and connected sessions, delivered to as the server does.
struct Net {
    engine: Engine,
    sessions: Vec<Session>,
    /// The clock commands run at (ms).
    now: u64,
}

impl Net {
    fn new(clients: u64) -> Net {
        let mut engine = Engine::new(Config::default(), 0);
        let sessions = (1..=clients)
            .map(|id| {
                engine.client_connected(id, alloc::format!("10.0.2.2:{id}"), 0);
                Session::new(id, &Config::default(), 1 << 20)
            })
            .collect();
        Net {
            engine,
            sessions,
            now: 0,
        }
    }

    /// Client `id` sends `request`; every session's new output, after the
    /// server's delivery of messages and invalidations.
    fn send(&mut self, id: u64, request: &str) -> Vec<Vec<u8>> {
        let s = &mut self.sessions[id as usize - 1];
        s.feed(request.as_bytes());
        s.run(&mut self.engine, self.now, |_| Logged::Answer);
        for (to, message) in self.engine.take_messages() {
            self.sessions[to as usize - 1].push_message(&message);
        }
        for (to, push) in self.engine.take_invalidations() {
            self.sessions[to as usize - 1].push_tracking(&push);
        }
        self.sessions
            .iter_mut()
            .map(|s| {
                let out = s.output();
                s.consume(out.len());
                out
            })
            .collect()
    }

    /// Client `id`'s part of [`send`](Net::send).
    fn to(&mut self, id: u64, request: &str) -> Vec<u8> {
        self.send(id, request).swap_remove(id as usize - 1)
    }
}

#[test]
fn resp2_invalidations_reach_the_subscribed_redirect_target() {
    let mut n = Net::new(3);
    n.to(2, "SUBSCRIBE __redis__:invalidate\r\n");
    assert_eq!(n.to(1, "CLIENT TRACKING on REDIRECT 2\r\n"), b"+OK\r\n");
    n.to(3, "SET k 1\r\nSET other 1\r\n");
    assert_eq!(n.to(1, "GET k\r\n"), b"$1\r\n1\r\n");
    let out = n.send(3, "SET other 2\r\nSET k 2\r\n");
    assert_eq!(
        out[1],
        b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nk\r\n"
    );
    assert!(out[0].is_empty(), "RESP2 without a redirect: nothing");
    n.to(1, "GET k\r\n");
    let out = n.send(3, "FLUSHALL\r\n");
    assert_eq!(
        out[1],
        b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n"
    );
    assert!(n
        .to(1, "CLIENT LIST ID 1\r\n")
        .windows(16)
        .any(|w| w == b"flags=t db=0 sub"));
    assert_eq!(n.to(1, "CLIENT GETREDIR\r\n"), b":2\r\n");
}

#[test]
fn resp3_clients_get_pushes_after_their_replies() {
    let mut n = Net::new(2);
    n.to(1, "HELLO 3\r\n");
    assert_eq!(n.to(1, "CLIENT TRACKING on\r\n"), b"+OK\r\n");
    n.to(1, "GET k\r\n");
    let out = n.send(2, "SET k 3\r\n");
    assert_eq!(out[0], b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n");
    n.to(1, "HSET h f 1\r\nHGET h f\r\n");
    assert_eq!(
        n.to(1, "HDEL h f\r\n"),
        b":1\r\n>2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nh\r\n"
    );
    n.to(1, "GET k\r\n");
    let out = n.send(2, "FLUSHDB\r\n");
    assert_eq!(out[0], b">2\r\n$10\r\ninvalidate\r\n_\r\n");
    assert_eq!(
        n.to(1, "CLIENT TRACKINGINFO\r\n"),
        b"%3\r\n$5\r\nflags\r\n~1\r\n$2\r\non\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*0\r\n"
    );
}

#[test]
fn a_gone_redirect_target_is_reported_as_broken() {
    let mut n = Net::new(3);
    n.to(1, "HELLO 3\r\n");
    n.to(1, "CLIENT TRACKING on REDIRECT 2\r\nGET z\r\n");
    n.engine.client_gone(2);
    let out = n.send(3, "SET z 1\r\n");
    assert_eq!(out[0], b">2\r\n$21\r\ntracking-redir-broken\r\n:2\r\n");
    let info = n.to(1, "CLIENT INFO\r\n");
    assert!(info.windows(9).any(|w| w == b"flags=tR "));
    assert!(info.windows(8).any(|w| w == b"redir=2 "));
}

#[test]
fn bcast_optin_and_noloop() {
    let mut n = Net::new(2);
    n.to(1, "HELLO 3\r\n");
    n.to(1, "CLIENT TRACKING on BCAST PREFIX a: NOLOOP\r\n");
    n.to(1, "SET a:mine 1\r\n");
    let out = n.send(2, "MSET a:1 1 b:1 1\r\n");
    assert_eq!(out[0], b">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\na:1\r\n");
    assert_eq!(n.to(1, "CLIENT TRACKING off\r\n"), b"+OK\r\n");
    n.to(1, "CLIENT TRACKING on OPTIN\r\nGET x\r\n");
    assert!(n.send(2, "SET x 1\r\n")[0].is_empty(), "OPTIN: x untracked");
    n.to(1, "CLIENT CACHING yes\r\nGET x\r\n");
    assert!(!n.send(2, "SET x 2\r\n")[0].is_empty());
}

#[test]
fn errors_are_worded_as_redis_words_them() {
    let mut n = Net::new(1);
    for (request, reply) in [
        ("CLIENT TRACKING maybe", "-ERR syntax error\r\n"),
        ("CLIENT TRACKING on foo", "-ERR syntax error\r\n"),
        (
            "CLIENT TRACKING on REDIRECT 999",
            "-ERR The client ID you want redirect to does not exist\r\n",
        ),
        (
            "CLIENT TRACKING on REDIRECT x",
            "-ERR value is not an integer or out of range\r\n",
        ),
        (
            "CLIENT TRACKING on PREFIX a",
            "-ERR PREFIX option requires BCAST mode to be enabled\r\n",
        ),
        (
            "CLIENT CACHING yes",
            "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled\r\n",
        ),
        ("CLIENT TRACKING on", "+OK\r\n"),
        ("CLIENT CACHING maybe", "-ERR syntax error\r\n"),
        (
            "CLIENT CACHING yes",
            "-ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.\r\n",
        ),
        (
            "CLIENT TRACKING on BCAST",
            "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.\r\n",
        ),
        (
            "CLIENT TRACKING",
            "-ERR wrong number of arguments for 'client|tracking' command\r\n",
        ),
    ] {
        let got = n.to(1, &alloc::format!("{request}\r\n"));
        assert_eq!(alloc::string::String::from_utf8_lossy(&got), reply, "{request}");
    }
}

#[test]
fn expiry_and_eviction_invalidate_too() {
    let mut n = Net::new(2);
    n.to(1, "HELLO 3\r\n");
    n.to(1, "CLIENT TRACKING on\r\n");
    n.to(
        2,
        "SET gone soon PX 1\r\nSET lazy soon PX 1\r\nSET big x\r\n",
    );
    n.to(1, "MGET gone lazy big\r\n");
    // The background sweep (no client changed it): "gone" goes, if it
    // comes first, else "lazy"; the other is found expired by a read.
    n.now = 10;
    n.engine.active_expire(10, 1);
    let swept = n.engine.take_invalidations();
    let Some((
        1,
        crate::tracking::Push::Invalidate {
            keys: Some(keys), ..
        },
    )) = swept.first()
    else {
        panic!("{swept:?}");
    };
    let other = if keys[0] == b"gone" { "lazy" } else { "gone" };
    let out = n.send(2, &alloc::format!("GET {other}\r\n"));
    let want = alloc::format!(">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\n{other}\r\n");
    assert_eq!(out[0], want.as_bytes());
    // Eviction: every key may go under allkeys-random.
    n.to(2, "CONFIG SET maxmemory-policy allkeys-random\r\n");
    // The lower limit takes effect at once.
    let out = n.send(2, "CONFIG SET maxmemory 1\r\n");
    assert_eq!(n.engine.key_count(), 0);
    assert_eq!(out[0], b">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nbig\r\n");
}
