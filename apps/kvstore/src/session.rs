//! One client connection's protocol state, apart from its socket: the
//! request parser, the replies waiting to be sent, and the rules that keep
//! one client from hurting the others.
//!
//! The server moves bytes between a socket and a [`Session`]; everything
//! about what those bytes mean lives here, where the host tests can reach
//! it. A session stops executing (and so the server stops reading) once
//! `output_limit` bytes of replies are waiting, so a client that pipelines
//! without reading its replies is throttled by TCP flow control instead of
//! growing the server's memory.
//!
//! Replies to writes can be held until the log says they are durable
//! (`appendfsync always`): the log callback of [`Session::run`] answers
//! each write with a [`Logged`], and the server later calls
//! [`Session::durable`] or [`Session::not_durable`]. A held reply, and
//! every reply after it, stays out of [`Session::output`] until then, and
//! a reply whose record never became durable is replaced by an error: no
//! client reads `+OK` for a write the disk does not have.
//!
//! A client blocked on keys (`BLPOP` finding nothing) runs nothing more
//! and sends no reply until the engine answers it: the server hands that
//! answer to [`Session::unblock`], and the commands pipelined behind it
//! run then.
//!
//! ```text
//!  output: [sent][sendable][held: +OK (log 4096)][GET reply]...
//!                          └ output() ends here until the log reaches 4096
//! ```

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::commands::{ClientCtx, Effects, Engine};
use crate::config::Config;
use crate::output::{self, Output};
use crate::resp::{bulk_header, Parser, Protocol, Reply};

/// What the log did with a command's records, as the session's reply
/// depends on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Logged {
    /// Nothing to wait for: logging is off, or the policy answers before
    /// the disk (`everysec`, `no`).
    Answer,
    /// Answer once the log is durable up to this position.
    HoldUntil(u64),
    /// The records could not be logged: answer this error instead.
    Refuse(Reply),
}

/// A reply waiting for the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    /// Its bytes in `output` (stream offsets).
    start: u64,
    end: u64,
    /// The log position it waits for.
    until: u64,
}

/// Unread published messages a subscriber may hold before it is closed
/// (Redis's `client-output-buffer-limit pubsub 32mb`).
pub const PUBSUB_HARD_LIMIT: usize = 32 << 20;

/// A connection's protocol state.
///
/// ```
/// use kvstore::commands::Engine;
/// use kvstore::config::Config;
/// use kvstore::session::{Logged, Session};
///
/// let mut engine = Engine::new(Config::default(), 0);
/// let mut session = Session::new(1, &Config::default(), 1 << 20);
/// session.feed(b"SET k v\r\nGET k\r\nQUIT\r\nPING\r\n");
/// session.run(&mut engine, 0, |_records| Logged::Answer); // no log: answer at once
/// assert_eq!(session.output(), b"+OK\r\n$1\r\nv\r\n+OK\r\n");
/// assert!(session.is_closing()); // PING after QUIT is never run
/// ```
#[derive(Debug)]
pub struct Session {
    parser: Parser,
    client: ClientCtx,
    output: Output,
    /// Replies waiting for the log, in output order.
    held: VecDeque<Held>,
    closing: bool,
    output_limit: usize,
    /// When the client last sent or received something (ms, the server's
    /// clock): what `timeout` measures idleness from.
    last_interaction_ms: u64,
    /// A command `CLIENT PAUSE` holds: it runs first once the pause ends.
    waiting: Option<crate::Args>,
}

impl Session {
    /// A session for client `id`, with the parser limits of `config`; it
    /// stops executing while `output_limit` bytes of replies are unsent.
    pub fn new(id: u64, config: &Config, output_limit: usize) -> Self {
        // The engine finds out at the first command whether the client
        // must log in (see `kvstore::acl`).
        let client = ClientCtx::new(id);
        Session {
            parser: Parser::with_limits(config.parser_limits()),
            client,
            output: Output::default(),
            held: VecDeque::new(),
            closing: false,
            output_limit,
            last_interaction_ms: 0,
            waiting: None,
        }
    }

    /// A session that only sends `reply` and closes: how a connection over
    /// `maxclients` is turned away.
    pub fn refuse(reply: &Reply) -> Self {
        let mut session = Session::new(0, &Config::default(), 0);
        session.output.push_with(|out| reply.encode(out));
        session.closing = true;
        session
    }

    /// The client's context (its id and name).
    pub fn client(&self) -> &ClientCtx {
        &self.client
    }

    /// Whether the server should read more from the socket: not after
    /// `QUIT` or a protocol error, nor while replies pile up unsent, nor
    /// while the client is blocked on keys.
    pub fn wants_input(&self) -> bool {
        self.can_run() && self.waiting.is_none()
    }

    /// Whether commands may run: not after `QUIT` or a protocol error, nor
    /// while replies pile up unsent, nor while the client is blocked.
    fn can_run(&self) -> bool {
        !self.closing && !self.client.is_blocked() && self.output.unsent() < self.output_limit
    }

    /// Whether a command waits for a `CLIENT PAUSE` to end (see
    /// `kvstore::pause`): the server runs the session again then.
    pub fn is_paused(&self) -> bool {
        self.waiting.is_some()
    }

    /// Whether the client waits on keys (`BLPOP`, ...) for the engine's
    /// answer.
    pub fn is_blocked(&self) -> bool {
        self.client.is_blocked()
    }

    /// The engine answered the blocked client (served, timed out, `CLIENT
    /// UNBLOCK`; see [`Engine::take_unblocked`]): `reply` joins the output,
    /// held until the log is durable up to `hold_until` if given (a served
    /// command's records), and the client runs commands again.
    pub fn unblock(&mut self, reply: &Reply, hold_until: Option<u64>) {
        if !self.client.is_blocked() {
            return;
        }
        self.client.unblocked();
        if self.client.reply_silenced(b"") {
            return;
        }
        match hold_until {
            Some(until) => self.push_held(reply, until),
            None => self.push_reply(reply),
        }
    }

    /// Bytes read from the client.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.parser.feed(bytes);
    }

    /// Request bytes received but not yet executed.
    pub fn buffered_input(&self) -> usize {
        self.parser.buffered()
    }

    /// Executes the complete commands received, in order, until the output
    /// limit is reached; `log` gets each command's changes, as records to
    /// append to the log, and says whether the reply must wait for the
    /// disk or become an error ([`Logged`]). A protocol error is answered
    /// and ends the session, as in Redis. Returns how many commands ran.
    pub fn run(
        &mut self,
        engine: &mut Engine,
        now_ms: u64,
        mut log: impl FnMut(&Effects) -> Logged,
    ) -> usize {
        let mut ran = 0;
        self.parser.set_limits(engine.config().parser_limits());
        let hard_limit = engine.config().client_output_hard_limit;
        while self.can_run() {
            let next = match self.waiting.take() {
                Some(args) => Ok(Some(args)),
                None => self.parser.next_command(),
            };
            match next {
                Ok(Some(args)) if engine.paused(&args, &self.client, now_ms) => {
                    // Not refused: it waits for the pause to end.
                    self.waiting = Some(args);
                    break;
                }
                Ok(Some(args)) => {
                    // The command's name (the arguments go to the engine),
                    // as long as any whose reply CLIENT REPLY may spare.
                    let mut name_buf = [0u8; 12];
                    let name = match args.first() {
                        Some(a) if a.len() <= name_buf.len() => {
                            name_buf[..a.len()].copy_from_slice(a);
                            &name_buf[..a.len()]
                        }
                        _ => &[][..],
                    };
                    let outcome = engine.execute_owned(args, &mut self.client, now_ms);
                    let logged = match outcome.effects.is_empty() {
                        true => Logged::Answer,
                        false => log(&outcome.effects),
                    };
                    if self.client.is_blocked() {
                        // Its reply comes when it is served (`unblock`).
                        ran += 1;
                        break;
                    }
                    // CLIENT REPLY OFF|SKIP: the command ran (and is
                    // logged), its reply is dropped.
                    let silenced = self.client.reply_silenced(name);
                    match logged {
                        _ if silenced => {}
                        Logged::Answer => self.push_reply(&outcome.reply),
                        Logged::HoldUntil(until) => self.push_held(&outcome.reply, until),
                        Logged::Refuse(error) => self.output.push_with(|out| error.encode(out)),
                    }
                    ran += 1;
                    if self.client.should_close() {
                        self.closing = true;
                    }
                    let unsent = self.output.unsent() as u64;
                    if hard_limit > 0 && unsent > hard_limit {
                        // Like Redis: the client is closed, its replies dropped.
                        self.discard_output();
                        self.closing = true;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    self.output.push_with(|out| e.to_reply().encode(out));
                    self.closing = true;
                }
            }
        }
        ran
    }

    /// While another client's script is busy (see `kvstore::busy`):
    /// answers each complete request with what `answer` says for it (given
    /// this client's context), running none of them. A reply held for the
    /// log keeps the ones behind it (these too) until the script ends and
    /// the log is flushed.
    pub fn run_busy(&mut self, mut answer: impl FnMut(&mut ClientCtx, &[Vec<u8>]) -> Reply) {
        while self.wants_input() {
            match self.parser.next_command() {
                Ok(Some(args)) => {
                    let reply = answer(&mut self.client, &args);
                    self.push_reply(&reply);
                    if self.client.should_close() {
                        self.closing = true;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    self.output.push_with(|out| e.to_reply().encode(out));
                    self.closing = true;
                }
            }
        }
    }

    /// Queues `reply`: a stored value of [`output::SHARE_FROM`] bytes or
    /// more stays where it is, and the socket takes it from there.
    fn push_reply(&mut self, reply: &Reply) {
        match reply {
            Reply::Shared(value) if value.len() >= output::SHARE_FROM => {
                self.output.push_with(|out| bulk_header(out, value.len()));
                self.output.push_value(value);
                self.output.push_with(|out| out.extend_from_slice(b"\r\n"));
            }
            _ => {
                let protocol = self.client.protocol();
                self.output
                    .push_with(|out| reply.encode_or_oom(protocol, out));
            }
        }
    }

    /// Queues `reply` held until the log is durable up to `until`: in one
    /// piece, so that [`not_durable`](Session::not_durable) can replace it.
    fn push_held(&mut self, reply: &Reply, until: u64) {
        let start = self.output.end();
        let protocol = self.client.protocol();
        self.output
            .push_with(|out| reply.encode_or_oom(protocol, out));
        let end = self.output.end();
        self.held.push_back(Held { start, end, until });
    }

    /// Where the replies ready to be sent end: at the first one held for
    /// the log.
    fn sendable_end(&self) -> u64 {
        self.held.front().map_or(self.output.end(), |h| h.start)
    }

    /// Replies ready to be sent (up to the first one held for the log), in
    /// pieces as they lie: a socket takes one after the other, and
    /// [`consume`](Session::consume) is told how much it took.
    pub fn output_pieces(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.output.pieces(self.sendable_end())
    }

    /// Whether replies are ready to be sent.
    pub fn has_output(&self) -> bool {
        self.sendable_end() > self.output.sent()
    }

    /// Replies ready to be sent, copied into one buffer (for tests and
    /// tools; the server sends [`output_pieces`](Session::output_pieces)).
    pub fn output(&self) -> Vec<u8> {
        self.output.to_vec(self.sendable_end())
    }

    /// Whether replies wait for the log to become durable.
    pub fn is_holding(&self) -> bool {
        !self.held.is_empty()
    }

    /// The log is durable up to `position`: the replies that waited for
    /// no more are released.
    pub fn durable(&mut self, position: u64) {
        while self.held.front().is_some_and(|h| h.until <= position) {
            self.held.pop_front();
        }
    }

    /// The log failed to become durable past `position`: every reply held
    /// for more is replaced by `error`, and released.
    pub fn not_durable(&mut self, position: u64, error: &Reply) {
        self.durable(position);
        let mut encoded = Vec::new();
        error.encode(&mut encoded);
        // Back to front, so earlier offsets stay valid while replacing.
        while let Some(h) = self.held.pop_back() {
            let replaced = self.output.replace(h.start, h.end, &encoded);
            debug_assert!(replaced, "a held reply is one unsent run of bytes");
        }
    }

    /// The first `n` bytes of the [`output_pieces`](Session::output_pieces)
    /// were sent.
    pub fn consume(&mut self, n: usize) {
        let sendable = self.sendable_end().saturating_sub(self.output.sent());
        self.output.consume(n.min(sendable as usize));
    }

    /// Appends a message published to one of the client's channels after
    /// the replies queued so far. `message` is the RESP2 array
    /// [`PubSub`](crate::pubsub::PubSub) builds; a RESP3 client gets it as
    /// a push (`>`), the same items under another type byte. A subscriber
    /// that lets more than [`PUBSUB_HARD_LIMIT`] bytes pile up unread is
    /// closed, its output dropped (Redis's pubsub output-buffer class);
    /// `false` then.
    pub fn push_message(&mut self, message: &[u8]) -> bool {
        let push = self.client.protocol() == Protocol::Resp3 && message.first() == Some(&b'*');
        if self.closing {
            return false;
        }
        let mut reserved = self.output.unsent() + message.len() <= PUBSUB_HARD_LIMIT;
        if reserved {
            self.output.push_with(|out| {
                reserved = out.try_reserve(message.len()).is_ok();
                if reserved {
                    match push {
                        true => {
                            out.push(b'>');
                            out.extend_from_slice(&message[1..]);
                        }
                        false => out.extend_from_slice(message),
                    }
                }
            });
        }
        if !reserved {
            self.discard_output();
            self.closing = true;
        }
        reserved
    }

    /// Appends a client-side caching message (see `kvstore::tracking`)
    /// encoded as Redis 7.0 sends it to this client: a RESP3 client gets
    /// a push (`>2 invalidate [keys]`, nil for a flush;
    /// `>2 tracking-redir-broken id`); a RESP2 client gets invalidations
    /// only as a redirect target subscribed to anything, as a
    /// `__redis__:invalidate` message; otherwise nothing. Like published
    /// messages, it goes out whatever `CLIENT REPLY` says.
    pub fn push_tracking(&mut self, push: &crate::tracking::Push) -> bool {
        use crate::tracking::Push;
        let resp3 = self.client.protocol() == Protocol::Resp3;
        let mut bytes = Vec::new();
        let keys = match push {
            Push::RedirBroken(id) if resp3 => {
                bytes.extend_from_slice(b">2\r\n$21\r\ntracking-redir-broken\r\n");
                Reply::Integer(i64::try_from(*id).unwrap_or(i64::MAX)).encode(&mut bytes);
                return self.push_message(&bytes);
            }
            Push::RedirBroken(_) => return true,
            Push::Invalidate { keys, .. } if resp3 => {
                bytes.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n");
                keys
            }
            Push::Invalidate {
                keys,
                redirected: true,
            } if self.client.subscriptions() > 0 => {
                bytes.extend_from_slice(b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n");
                keys
            }
            Push::Invalidate { .. } => return true,
        };
        match keys {
            Some(keys) => Reply::array(keys.iter().map(|k| Reply::bulk(k.as_slice())).collect())
                .encode(&mut bytes),
            None if resp3 => bytes.extend_from_slice(b"_\r\n"),
            None => bytes.extend_from_slice(b"$-1\r\n"),
        }
        // Already in its final form: `push_message` leaves a `>` alone.
        self.push_message(&bytes)
    }

    /// Drops every reply, sent or not: nobody is left to read them.
    pub fn discard_output(&mut self) {
        self.held.clear();
        self.output.clear();
    }

    /// The client sent or received bytes at `now_ms`: it is not idle.
    pub fn touch(&mut self, now_ms: u64) {
        self.last_interaction_ms = self.last_interaction_ms.max(now_ms);
    }

    /// Whether the client has been idle (nothing sent nor received, see
    /// [`touch`](Session::touch)) for more than `timeout_s` seconds, so
    /// the server should close it (`CONFIG SET timeout`; 0: never). As in
    /// Redis, subscribers (they only listen) and clients blocked on keys
    /// (they have a timeout of their own) are never idle.
    pub fn idle_past(&self, timeout_s: u64, now_ms: u64) -> bool {
        timeout_s > 0
            && !self.client.is_blocked()
            && self.client.subscriptions() == 0
            && now_ms.saturating_sub(self.last_interaction_ms) > timeout_s.saturating_mul(1000)
    }

    /// The client will send nothing more (it closed its side): finish
    /// sending the replies, then close.
    pub fn input_ended(&mut self) {
        self.closing = true;
    }

    /// Whether the session is ending (`QUIT`, a protocol error, refused,
    /// or the client closed its side).
    pub fn is_closing(&self) -> bool {
        self.closing
    }

    /// Whether the connection should be closed now: ending, and every
    /// reply sent.
    pub fn done(&self) -> bool {
        self.closing && self.output.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Engine {
        Engine::new(Config::default(), 0)
    }

    /// Client `id` with the default config and 1 MiB for replies.
    fn client(id: u64) -> Session {
        Session::new(id, &Config::default(), 1 << 20)
    }

    /// Runs what `s` was fed at `now`, with no log to wait for: every
    /// reply is answered at once. How many commands ran.
    fn answer(s: &mut Session, engine: &mut Engine, now: u64) -> usize {
        s.run(engine, now, |_| Logged::Answer)
    }

    #[test]
    fn a_command_split_anywhere_runs_once_complete() {
        let mut engine = engine();
        let mut s = client(1);
        let request = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
        for byte in request.chunks(1) {
            assert_eq!(s.output(), b"");
            s.feed(byte);
            answer(&mut s, &mut engine, 0);
        }
        assert_eq!(s.output(), b"+OK\r\n");
        assert_eq!(s.buffered_input(), 0);
    }

    #[test]
    fn output_limit_pauses_execution_until_replies_are_sent() {
        let mut engine = engine();
        let mut s = Session::new(1, &Config::default(), 64);
        s.feed(&b"PING\r\n".repeat(100));
        let first = answer(&mut s, &mut engine, 0);
        // 7 bytes per +PONG: it stops at the first reply past 64 bytes.
        assert_eq!(first, 10);
        assert!(!s.wants_input());
        assert_eq!(answer(&mut s, &mut engine, 0), 0, "paused while full");
        s.consume(s.output().len());
        assert!(s.wants_input());
        assert_eq!(answer(&mut s, &mut engine, 0), 10);
        let mut total = 20;
        while total < 100 {
            s.consume(s.output().len());
            total += answer(&mut s, &mut engine, 0);
        }
        assert_eq!(total, 100);
    }

    #[test]
    fn client_reply_off_and_skip_drop_replies_not_commands() {
        let mut engine = engine();
        let mut s = client(1);
        s.feed(b"CLIENT REPLY OFF\r\nSET a 1\r\nCLIENT REPLY ON\r\nGET a\r\n");
        s.feed(b"CLIENT REPLY SKIP\r\nINCR a\r\nINCR a\r\n");
        answer(&mut s, &mut engine, 0);
        assert_eq!(s.output(), b"+OK\r\n$1\r\n1\r\n:3\r\n");
    }

    #[test]
    fn idle_past_the_timeout_unless_subscribed_or_blocked() {
        let mut engine = engine();
        let mut s = client(1);
        s.touch(10_000);
        assert!(!s.idle_past(0, u64::MAX), "0: never");
        assert!(!s.idle_past(2, 12_000));
        assert!(s.idle_past(2, 12_001));
        s.touch(12_001);
        assert!(!s.idle_past(2, 14_000));
        s.feed(b"SUBSCRIBE c\r\n");
        answer(&mut s, &mut engine, 12_001);
        assert!(!s.idle_past(2, 100_000), "a subscriber only listens");
        let mut blocked = client(2);
        blocked.touch(10_000);
        blocked.feed(b"BLPOP list 0\r\n");
        answer(&mut blocked, &mut engine, 10_000);
        assert!(blocked.is_blocked());
        assert!(!blocked.idle_past(2, 100_000), "a blocked client waits");
    }

    #[test]
    fn a_resp3_subscriber_gets_messages_as_pushes() {
        let mut engine = engine();
        let mut resp2 = client(1);
        let mut resp3 = client(2);
        resp2.feed(b"SUBSCRIBE c\r\n");
        resp3.feed(b"HELLO 3\r\nSUBSCRIBE c\r\n");
        for s in [&mut resp2, &mut resp3] {
            answer(s, &mut engine, 0);
            s.consume(s.output().len());
        }
        let messages = engine.take_messages();
        assert!(messages.is_empty());
        let mut publisher = crate::commands::ClientCtx::new(3);
        let publish = [b"PUBLISH".to_vec(), b"c".to_vec(), b"hi".to_vec()];
        engine.execute(&publish, &mut publisher, 0);
        for (id, message) in engine.take_messages() {
            let to = if id == 1 { &mut resp2 } else { &mut resp3 };
            assert!(to.push_message(&message));
        }
        assert_eq!(
            resp2.output(),
            b"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n"
        );
        assert_eq!(
            resp3.output(),
            b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n"
        );
    }

    #[test]
    fn subscribing_is_confirmed_while_replies_are_off() {
        let mut engine = engine();
        let mut s = client(1);
        s.feed(b"CLIENT REPLY OFF\r\nPSUBSCRIBE *\r\n");
        answer(&mut s, &mut engine, 0);
        assert_eq!(
            s.output(),
            b"*3\r\n$10\r\npsubscribe\r\n$1\r\n*\r\n:1\r\n",
            "a push, like the messages after it"
        );
        // Redis 7.0.15 confirms the sharded ones alike.
        s.feed(b"SSUBSCRIBE a\r\nSUNSUBSCRIBE a\r\nPING\r\n");
        answer(&mut s, &mut engine, 0);
        assert_eq!(
            s.output(),
            b"*3\r\n$10\r\npsubscribe\r\n$1\r\n*\r\n:1\r\n*3\r\n$10\r\nssubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$12\r\nsunsubscribe\r\n$1\r\na\r\n:0\r\n"
        );
    }

    #[test]
    fn writes_are_logged_in_order() {
        let mut engine = engine();
        let mut s = client(1);
        s.feed(b"SET a 1\r\nGET a\r\nINCR a\r\n");
        let mut logged = Vec::new();
        s.run(&mut engine, 0, |effects| {
            logged.extend(effects.commands().iter().map(|args| args.join(&b' ')));
            Logged::Answer
        });
        assert_eq!(logged, [b"SET a 1".to_vec(), b"SET a 2 KEEPTTL".to_vec()]);
    }

    #[test]
    fn protocol_error_is_answered_then_closes() {
        let mut engine = engine();
        let mut s = client(1);
        s.feed(b"PING\r\n*1\r\nx\r\nPING\r\n");
        answer(&mut s, &mut engine, 0);
        assert_eq!(
            s.output(),
            b"+PONG\r\n-ERR Protocol error: expected '$', got 'x'\r\n"
        );
        assert!(s.is_closing() && !s.wants_input() && !s.done());
        s.consume(s.output().len());
        assert!(s.done());
    }

    #[test]
    fn refused_session_says_why_then_closes() {
        let mut s = Session::refuse(&Reply::error("ERR max number of clients reached"));
        assert_eq!(s.output(), b"-ERR max number of clients reached\r\n");
        assert!(!s.wants_input());
        s.consume(5);
        assert_eq!(s.output(), b"max number of clients reached\r\n");
        s.consume(100);
        assert!(s.done());
    }

    #[test]
    fn long_output_is_consumed_piecewise() {
        let mut engine = engine();
        let mut s = client(1);
        let value = vec![b'x'; 300_000];
        let mut set = Vec::new();
        crate::resp::encode_command(&[&b"SET"[..], b"big", &value], &mut set);
        s.feed(&set);
        s.feed(b"GET big\r\n");
        answer(&mut s, &mut engine, 0);
        let mut got = Vec::new();
        while !s.output().is_empty() {
            let n = s.output().len().min(16 * 1024);
            got.extend_from_slice(&s.output()[..n]);
            s.consume(n);
        }
        let mut expected = b"+OK\r\n$300000\r\n".to_vec();
        expected.extend_from_slice(&value);
        expected.extend_from_slice(b"\r\n");
        assert_eq!(got, expected);
    }

    /// A log that holds each write until position `n` (its n-th write).
    fn holding(counter: &mut u64) -> impl FnMut(&Effects) -> Logged + '_ {
        move |_| {
            *counter += 1;
            Logged::HoldUntil(*counter)
        }
    }

    #[test]
    fn replies_to_writes_wait_for_the_log_and_keep_their_order() {
        let mut engine = engine();
        let mut s = client(1);
        let mut writes = 0;
        s.feed(b"PING\r\nSET a 1\r\nGET a\r\nSET b 2\r\n");
        s.run(&mut engine, 0, holding(&mut writes));
        assert_eq!(s.output(), b"+PONG\r\n", "nothing after a held reply");
        assert!(s.is_holding());
        s.consume(7);
        s.durable(1);
        assert_eq!(s.output(), b"+OK\r\n$1\r\n1\r\n", "up to the second write");
        s.durable(2);
        assert_eq!(s.output(), b"+OK\r\n$1\r\n1\r\n+OK\r\n");
        assert!(!s.is_holding());
    }

    #[test]
    fn a_write_that_never_became_durable_is_answered_with_the_error() {
        let mut engine = engine();
        let mut s = client(1);
        let mut writes = 0;
        s.feed(b"SET a 1\r\nSET b 2\r\nGET b\r\nSET c 3\r\n");
        s.run(&mut engine, 0, holding(&mut writes));
        s.not_durable(1, &Reply::error("MISCONF disk says no"));
        assert_eq!(
            s.output(),
            b"+OK\r\n-MISCONF disk says no\r\n$1\r\n2\r\n-MISCONF disk says no\r\n"
        );
    }

    #[test]
    fn a_refused_record_is_answered_with_the_logs_error() {
        let mut engine = engine();
        let mut s = client(1);
        s.feed(b"SET a 1\r\nGET nothing\r\n");
        s.run(&mut engine, 0, |_| {
            Logged::Refuse(Reply::error("MISCONF full"))
        });
        assert_eq!(s.output(), b"-MISCONF full\r\n$-1\r\n");
    }

    #[test]
    fn a_closing_session_is_done_only_once_held_replies_are_out() {
        let mut engine = engine();
        let mut s = client(1);
        let mut writes = 0;
        s.feed(b"SET a 1\r\n");
        s.run(&mut engine, 0, holding(&mut writes));
        s.input_ended();
        assert!(!s.done(), "the reply is still held");
        s.consume(100);
        assert!(!s.done());
        s.durable(1);
        s.consume(s.output().len());
        assert!(s.done());
    }

    #[test]
    fn held_replies_keep_their_place_while_a_large_reply_is_sent_in_pieces() {
        let mut engine = engine();
        let mut s = client(1);
        let mut writes = 0;
        let value = vec![b'x'; 128 * 1024];
        let mut set = Vec::new();
        crate::resp::encode_command(&[&b"SET"[..], b"big", &value], &mut set);
        s.feed(&set);
        s.feed(b"GET big\r\nSET a 1\r\n");
        s.run(&mut engine, 0, holding(&mut writes));
        s.durable(1);
        let reply_len = s.output().len();
        s.consume(reply_len - 10); // the value went from the store's memory
        assert_eq!(s.output().len(), 10);
        s.consume(10);
        s.not_durable(1, &Reply::error("ERR lost"));
        assert_eq!(s.output(), b"-ERR lost\r\n");
    }

    #[test]
    fn while_a_script_is_busy_requests_are_answered_without_running() {
        let mut engine = Engine::new(Config::default(), 0);
        let mut session = Session::new(1, &Config::default(), 1 << 20);
        let mut script = crate::busy::BusyScript::default();
        session.feed(b"SET k v\r\nMULTI\r\nSCRIPT KILL\r\nEXEC\r\nSCRIPT KILL\r\nQUIT\r\nPING\r\n");
        session.run_busy(|client, args| crate::busy::answer_client(&mut script, client, args));
        let out = String::from_utf8(session.output()).unwrap();
        let lines: Vec<&str> = out.split("\r\n").collect();
        assert!(lines[0].starts_with("-BUSY"), "{out}");
        assert_eq!(&lines[1..3], ["+OK", "+QUEUED"]);
        assert!(lines[3].starts_with("-EXECABORT Transaction discarded because of: BUSY"));
        assert_eq!(&lines[4..6], ["+OK", "+OK"]);
        assert!(script.kill);
        assert!(session.is_closing(), "QUIT closes; PING is never answered");
        // Nothing ran.
        session.run(&mut engine, 0, |_| Logged::Answer);
        assert_eq!(engine.key_count(), 0);
    }

    #[test]
    fn a_client_past_the_output_hard_limit_is_closed() {
        let mut engine = engine();
        engine
            .config_mut()
            .set("client-output-buffer-limit", b"normal 100000 0 0")
            .unwrap();
        let mut s = client(1);
        let value = vec![b'x'; 200_000];
        let mut set = Vec::new();
        crate::resp::encode_command(&[&b"SET"[..], b"big", &value], &mut set);
        s.feed(&set);
        s.feed(b"GET big\r\nPING\r\n");
        answer(&mut s, &mut engine, 0);
        assert!(s.is_closing());
        assert!(s.done(), "its replies are dropped, not sent");
    }

    #[test]
    fn a_blocked_client_waits_then_runs_what_it_pipelined() {
        let mut engine = engine();
        let mut waiting = client(1);
        let mut pusher = client(2);
        waiting.feed(b"BLPOP jobs 0\r\nPING\r\n");
        assert_eq!(answer(&mut waiting, &mut engine, 0), 1);
        assert!(waiting.is_blocked() && !waiting.wants_input());
        assert_eq!(waiting.output(), b"", "no reply while blocked");
        pusher.feed(b"RPUSH jobs j1\r\n");
        let mut logged = Vec::new();
        pusher.run(&mut engine, 0, |effects| {
            logged.extend(effects.commands().iter().map(|args| args.join(&b' ')));
            Logged::Answer
        });
        assert_eq!(logged, [b"RPUSH jobs j1".to_vec(), b"LPOP jobs".to_vec()]);
        // What the server does: hand each answer to its session.
        for (id, reply) in engine.take_unblocked() {
            assert_eq!(id, 1);
            waiting.unblock(&reply, None);
        }
        assert!(waiting.wants_input());
        answer(&mut waiting, &mut engine, 0);
        assert_eq!(
            waiting.output(),
            b"*2\r\n$4\r\njobs\r\n$2\r\nj1\r\n+PONG\r\n"
        );
    }

    #[test]
    fn a_served_reply_can_wait_for_the_log() {
        let mut engine = engine();
        let mut waiting = client(1);
        waiting.feed(b"BRPOP q 0\r\n");
        answer(&mut waiting, &mut engine, 0);
        engine.execute(
            &[b"RPUSH".to_vec(), b"q".to_vec(), b"x".to_vec()],
            &mut ClientCtx::new(2),
            0,
        );
        let (_, reply) = engine.take_unblocked().pop().unwrap();
        waiting.unblock(&reply, Some(10));
        assert_eq!(waiting.output(), b"");
        waiting.durable(10);
        assert_eq!(waiting.output(), b"*2\r\n$1\r\nq\r\n$1\r\nx\r\n");
    }

    #[test]
    fn config_set_limits_apply_to_open_connections() {
        let mut engine = engine();
        let mut s = client(1);
        engine
            .config_mut()
            .set("client-query-buffer-limit", b"1mb")
            .unwrap();
        s.feed(b"*2\r\n$4\r\nECHO\r\n$2000000\r\n");
        answer(&mut s, &mut engine, 0);
        assert!(s.is_closing());
        assert!(String::from_utf8_lossy(&s.output()).contains("client-query-buffer-limit"));
    }
}
