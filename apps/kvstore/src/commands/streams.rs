//! Stream commands on entries: `XADD`, `XLEN`, `XRANGE`, `XREVRANGE`,
//! `XDEL`, `XTRIM`, `XSETID` and `XREAD` (which may block until an
//! `XADD`, see `kvstore::blocking`), and what the group commands
//! (`commands::stream_groups`) share with them: ID parsing, entry replies,
//! the records that recreate a stream.
//!
//! # What gets logged
//!
//! | command                      | logged as                                    |
//! |------------------------------|----------------------------------------------|
//! | `XADD` (any ID form, options)| `XADD key <the ID it got> field value ...`, then `XTRIM key MAXLEN = <length left>` if it trimmed |
//! | `XTRIM` (any strategy)       | `XTRIM key MAXLEN = <length left>` if it removed entries |
//! | `XDEL`                       | `XDEL key <the IDs it removed>`               |
//! | `XSETID`                     | as given                                     |
//! | a whole stream (rewrite, `RENAME` ...) | see [`push_stream`]                |
//!
//! Each replays to the same stream whatever the node settings: an
//! approximate trim (`~`) is logged as the exact length it left.

use alloc::vec::Vec;

use super::errors;
use super::exec::{reply_fits, Exec};
use super::strings::copy_for_reply;
use crate::aof::{Piece, RecordBuf};
use crate::blocking::Wait;
use crate::config::Config;
use crate::notify;
use crate::num::{format_i64, parse_i64};
use crate::resp::{Bulks, Reply};
use crate::store::{Store, Stream, StreamId, Trim};

/// `-ERR Invalid stream ID specified as stream command argument`.
pub(super) fn invalid_id() -> Reply {
    Reply::error("ERR Invalid stream ID specified as stream command argument")
}

/// The reply when memory for an entry or a reply cannot be had.
pub(super) fn oom() -> Reply {
    Reply::error("OOM not enough memory for the stream")
}

/// An ID argument without the special forms: `ms-seq`, or `ms` (its
/// sequence then `missing_seq`).
pub(super) fn parse_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, Reply> {
    StreamId::parse(arg, missing_seq).ok_or_else(invalid_id)
}

/// A range bound: `-`, `+`, an ID (a missing sequence is 0 for a start,
/// the largest for an end) or `(ID`, exclusive.
pub(super) fn parse_bound(arg: &[u8], start: bool) -> Result<StreamId, Reply> {
    match arg {
        b"-" => return Ok(StreamId::ZERO),
        b"+" => return Ok(StreamId::MAX),
        _ => {}
    }
    let missing = if start { 0 } else { u64::MAX };
    match arg.strip_prefix(b"(") {
        Some(rest) => {
            let id = parse_id(rest, missing)?;
            let stepped = if start { id.next() } else { id.prev() };
            stepped.ok_or_else(|| match start {
                true => Reply::error("ERR invalid start ID for the interval"),
                false => Reply::error("ERR invalid end ID for the interval"),
            })
        }
        None => parse_id(arg, missing),
    }
}

/// An ID as a bulk string reply.
pub(super) fn id_reply(id: StreamId) -> Reply {
    Reply::bulk(id.format())
}

/// One entry as Redis answers it: `[id, [field, value, ...]]`.
pub(super) fn entry_reply(id: StreamId, fields: &[Vec<u8>]) -> Result<Reply, Reply> {
    let mut items = Vec::new();
    items.try_reserve_exact(fields.len()).map_err(|_| oom())?;
    for field in fields {
        items.push(Reply::Bulk(Some(copy_for_reply(field)?)));
    }
    Ok(Reply::array(alloc::vec![id_reply(id), Reply::array(items)]))
}

/// Entries as an array reply, refused if it would be too large (see
/// [`reply_fits`]), encoded as they are read: one buffer for the whole
/// reply (`XRANGE` of ten entries would otherwise take some sixty).
pub(super) fn entries_reply<'a>(
    config: &Config,
    entries: impl Iterator<Item = (StreamId, &'a [Vec<u8>])> + Clone,
) -> Reply {
    let bytes: usize = entries
        .clone()
        .map(|(id, fields)| {
            Bulks::array_len(2)
                + Bulks::bulk_len(id.text_len())
                + Bulks::array_len(fields.len())
                + fields
                    .iter()
                    .map(|f| Bulks::bulk_len(f.len()))
                    .sum::<usize>()
        })
        .sum();
    if let Err(reply) = reply_fits(config, bytes as u64) {
        return reply;
    }
    let Some(mut out) = Bulks::with_room(bytes) else {
        return oom();
    };
    for (id, fields) in entries {
        out.push_array(2);
        out.push_element_with(id.text_len(), |text| id.push_text(text));
        out.push_inner_array(fields.len());
        for field in fields {
            out.push_element(field);
        }
    }
    Reply::Bulks(out)
}

/// Adds the records that recreate `stream` at a missing `key`: an `XADD`
/// per entry (an empty stream is made by an `XADD ... MAXLEN 0` of a
/// placeholder), then `XSETID` with its counters, then per group
/// `XGROUP CREATE`, a `CREATECONSUMER` per consumer and an `XCLAIM ...
/// FORCE JUSTID` per pending entry with its delivery time and count.
/// Pending entries whose entry was deleted are added as placeholders
/// before the claims and deleted after them, so the PEL keeps them as
/// Redis does. What the log rewrite writes for a stream.
pub fn push_stream(out: &mut dyn RecordBuf, key: &[u8], stream: &Stream) {
    let mut orphans: Vec<StreamId> = stream
        .groups
        .values()
        .flat_map(|g| g.pending.keys().copied())
        .filter(|id| stream.get(*id).is_none())
        .collect();
    orphans.sort_unstable();
    orphans.dedup();
    let placeholder: [Vec<u8>; 2] = [b"x".to_vec(), b"y".to_vec()];
    let mut live = stream.range(StreamId::ZERO, StreamId::MAX).peekable();
    let mut gone = orphans.iter().copied().peekable();
    let mut any = false;
    loop {
        let next = match (live.peek(), gone.peek()) {
            (Some((a, _)), Some(b)) if b < a => gone.next().map(|id| (id, &placeholder[..])),
            (Some(_), _) => live.next(),
            (None, Some(_)) => gone.next().map(|id| (id, &placeholder[..])),
            (None, None) => None,
        };
        let Some((id, fields)) = next else { break };
        any = true;
        let id = id.format();
        let mut args: Vec<Piece<'_>> = Vec::with_capacity(3 + fields.len());
        args.extend([Piece::Bytes(b"XADD"), Piece::Bytes(key), Piece::Bytes(&id)]);
        args.extend(fields.iter().map(|f| Piece::Bytes(f)));
        out.record(&args);
    }
    if !any {
        out.record(&[
            Piece::Bytes(b"XADD"),
            Piece::Bytes(key),
            Piece::Bytes(b"MAXLEN"),
            Piece::Bytes(b"0"),
            Piece::Bytes(b"0-1"),
            Piece::Bytes(b"x"),
            Piece::Bytes(b"y"),
        ]);
    }
    let last = stream.last_id.format();
    let added = format_i64(stream.entries_added as i64);
    let deleted = stream.max_deleted.format();
    let setid = [
        Piece::Bytes(b"XSETID"),
        Piece::Bytes(key),
        Piece::Bytes(&last),
        Piece::Bytes(b"ENTRIESADDED"),
        Piece::Bytes(&added),
        Piece::Bytes(b"MAXDELETEDID"),
        Piece::Bytes(&deleted),
    ];
    out.record(&setid);
    for (name, group) in &stream.groups {
        let id = group.last_id.format();
        let read = format_i64(group.entries_read.map_or(-1, |n| n as i64));
        out.record(&[
            Piece::Bytes(b"XGROUP"),
            Piece::Bytes(b"CREATE"),
            Piece::Bytes(key),
            Piece::Bytes(name),
            Piece::Bytes(&id),
            Piece::Bytes(b"ENTRIESREAD"),
            Piece::Bytes(&read),
        ]);
        for consumer in group.consumers.keys() {
            out.record(&[
                Piece::Bytes(b"XGROUP"),
                Piece::Bytes(b"CREATECONSUMER"),
                Piece::Bytes(key),
                Piece::Bytes(name),
                Piece::Bytes(consumer),
            ]);
        }
        for (id, pending) in &group.pending {
            let id = id.format();
            let time = format_i64(pending.delivered_ms as i64);
            let count = format_i64(pending.deliveries as i64);
            out.record(&[
                Piece::Bytes(b"XCLAIM"),
                Piece::Bytes(key),
                Piece::Bytes(name),
                Piece::Bytes(&pending.consumer),
                Piece::Bytes(b"0"),
                Piece::Bytes(&id),
                Piece::Bytes(b"TIME"),
                Piece::Bytes(&time),
                Piece::Bytes(b"RETRYCOUNT"),
                Piece::Bytes(&count),
                Piece::Bytes(b"FORCE"),
                Piece::Bytes(b"JUSTID"),
            ]);
        }
    }
    if !orphans.is_empty() {
        let ids: Vec<Vec<u8>> = orphans.iter().map(|id| id.format()).collect();
        let mut args: Vec<Piece<'_>> = Vec::with_capacity(2 + ids.len());
        args.extend([Piece::Bytes(b"XDEL"), Piece::Bytes(key)]);
        args.extend(ids.iter().map(|id| Piece::Bytes(id)));
        out.record(&args);
        // The deletions moved the counters: set them back.
        out.record(&setid);
    }
}

/// A trimming strategy as `XADD` and `XTRIM` take it.
#[derive(Clone, Copy, Default)]
struct TrimArgs {
    how: Option<Trim>,
    approx: bool,
    limit: Option<u64>,
}

impl TrimArgs {
    /// Reads `MAXLEN|MINID [=|~] threshold` or `LIMIT count` at `args[at]`;
    /// `Ok(None)` if `args[at]` is neither, else the index after it.
    fn parse(&mut self, args: &[Vec<u8>], at: usize) -> Result<Option<usize>, Reply> {
        let word = args[at].to_ascii_uppercase();
        let has_next = at + 1 < args.len();
        match word.as_slice() {
            b"MAXLEN" | b"MINID" if has_next => {
                let mut next = at + 1;
                if matches!(args[next].as_slice(), b"=" | b"~") && next + 1 < args.len() {
                    self.approx = args[next] == b"~";
                    next += 1;
                }
                let how = if word == b"MAXLEN" {
                    let n = parse_i64(&args[next]).ok_or_else(errors::not_integer)?;
                    if n < 0 {
                        return Err(Reply::error("ERR The MAXLEN argument must be >= 0."));
                    }
                    Trim::MaxLen(n as u64)
                } else {
                    Trim::MinId(parse_id(&args[next], 0)?)
                };
                if self.how.is_some_and(|old| {
                    core::mem::discriminant(&old) != core::mem::discriminant(&how)
                }) {
                    return Err(Reply::error(
                        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                    ));
                }
                self.how = Some(how);
                Ok(Some(next + 1))
            }
            b"LIMIT" if has_next => {
                let n = parse_i64(&args[at + 1]).ok_or_else(errors::not_integer)?;
                if n < 0 {
                    return Err(Reply::error("ERR The LIMIT argument must be >= 0."));
                }
                self.limit = Some(n as u64);
                Ok(Some(at + 2))
            }
            _ => Ok(None),
        }
    }

    /// Refuses `LIMIT` without `~`.
    fn check(&self) -> Result<(), Reply> {
        if self.limit.is_some() && !self.approx {
            return Err(Reply::error(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
        Ok(())
    }

    /// The most entries an approximate trim removes: `LIMIT`, else a
    /// hundred nodes' worth (0: no limit).
    fn limit(&self, config: &Config) -> u64 {
        match (self.approx, self.limit) {
            (false, _) => 0,
            (true, Some(limit)) => limit,
            (true, None) if config.stream_node_max_entries == 0 => 10_000,
            (true, None) => config.stream_node_max_entries.saturating_mul(100),
        }
    }
}

/// Trims the stream at `key` as `trim` says; logs and notifies what it
/// removed. Returns how many entries went.
fn trim_logged(x: &mut Exec<'_>, key: &[u8], trim: &TrimArgs) -> u64 {
    let Some(how) = trim.how else { return 0 };
    let limit = trim.limit(x.config);
    let approx = trim.approx;
    let outcome = x
        .store
        .update_stream(key, false, |s| (s.trim(how, approx, limit), s.len()));
    let Some((removed, left)) = outcome else {
        return 0;
    };
    if removed > 0 {
        let left = format_i64(left as i64);
        x.log([&b"XTRIM"[..], key, b"MAXLEN", b"=", &left]);
        x.notify(notify::STREAM, "xtrim", key);
    }
    removed
}

/// How `XADD` names the new entry's ID.
enum NewId {
    /// `*`: time and sequence chosen.
    Auto,
    /// `ms-*`: the sequence chosen.
    Seq(u64),
    /// An explicit ID.
    Given(StreamId),
}

/// `XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]]
/// *|ID field value [field value ...]`: appends an entry; its ID, or nil
/// if the key is missing and `NOMKSTREAM` given.
pub(crate) fn xadd(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut trim = TrimArgs::default();
    let mut nomkstream = false;
    let mut at = 2;
    while at < args.len() {
        if args[at].eq_ignore_ascii_case(b"NOMKSTREAM") {
            nomkstream = true;
            at += 1;
            continue;
        }
        match trim.parse(args, at) {
            Ok(Some(next)) => at = next,
            Ok(None) => break,
            Err(reply) => return reply,
        }
    }
    // As Redis: the ID is read with the options, then the trimming is
    // checked, then the field count, and only then the ID's value.
    let new_id = match args.get(at).map(Vec::as_slice) {
        None => None,
        Some(b"*") => Some(NewId::Auto),
        Some(arg) => Some(match arg.strip_suffix(b"-*") {
            Some(ms) => match StreamId::parse(ms, 0) {
                Some(id) if !ms.contains(&b'-') => NewId::Seq(id.ms),
                _ => return invalid_id(),
            },
            None => match parse_id(arg, 0) {
                Ok(id) => NewId::Given(id),
                Err(reply) => return reply,
            },
        }),
    };
    if let Err(reply) = trim.check() {
        return reply;
    }
    let pairs = args.len().saturating_sub(at + 1);
    let Some(new_id) = new_id.filter(|_| pairs > 0 && pairs.is_multiple_of(2)) else {
        return errors::wrong_args("xadd");
    };
    if matches!(new_id, NewId::Given(StreamId::ZERO)) {
        return Reply::error("ERR The ID specified in XADD must be greater than 0-0");
    }
    let key = args[1].clone();
    let last = match x.live_stream(&key) {
        Ok(Some(stream)) => stream.last_id,
        Ok(None) if nomkstream => return Reply::nil(),
        Ok(None) => StreamId::ZERO,
        Err(reply) => return reply,
    };
    let smaller = || {
        Reply::error(
            "ERR The ID specified in XADD is equal or smaller than the target stream top item",
        )
    };
    if last == StreamId::MAX {
        return Reply::error(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        );
    }
    let id = match new_id {
        NewId::Auto if x.now > last.ms => StreamId::new(x.now, 0),
        NewId::Auto => match last.next() {
            Some(id) => id,
            None => return smaller(),
        },
        NewId::Seq(ms) if ms > last.ms => StreamId::new(ms, 0),
        NewId::Seq(ms) if ms == last.ms => match last.seq.checked_add(1) {
            Some(seq) => StreamId::new(ms, seq),
            None => return Reply::error("ERR Elements are too large to be stored"),
        },
        NewId::Seq(_) => return smaller(),
        NewId::Given(id) if id > last => id,
        NewId::Given(_) => return smaller(),
    };
    let mut fields = Vec::new();
    if fields.try_reserve_exact(args.len() - at - 1).is_err() {
        return oom();
    }
    for arg in &mut args[at + 1..] {
        // Taken, not copied: the arguments are this command's own.
        fields.push(core::mem::take(arg));
    }
    let (max_entries, max_bytes) = (
        x.config.stream_node_max_entries,
        x.config.stream_node_max_bytes,
    );
    let id_text = id.format();
    {
        let mut record: Vec<Piece<'_>> = Vec::with_capacity(3 + fields.len());
        record.extend([
            Piece::Bytes(b"XADD"),
            Piece::Bytes(&key),
            Piece::Bytes(&id_text),
        ]);
        record.extend(fields.iter().map(|f| Piece::Bytes(f)));
        x.log_args(&record);
    }
    x.store
        .update_stream(&key, true, |s| s.add(id, fields, max_entries, max_bytes));
    x.notify(notify::STREAM, "xadd", &key);
    trim_logged(x, &key, &trim);
    x.key_ready(&key);
    Reply::bulk(id_text)
}

/// Growth of `XADD`: the fields and values, and the key if it is new.
pub(crate) fn xadd_growth(store: &Store, _config: &Config, args: &[Vec<u8>]) -> usize {
    let bytes: usize = args[2..].iter().map(|a| a.len() + 8).sum();
    let entry = crate::store::Stream::cost_of(&[]) + bytes;
    match store.get(&args[1]) {
        Some(_) => entry,
        None => Store::cost(args[1].len(), entry),
    }
}

/// `XLEN key`: the number of entries, 0 if the key is missing.
pub(crate) fn xlen(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.read_stream(&args[1]) {
        Ok(Some(stream)) => Reply::Integer(stream.len() as i64),
        Ok(None) => Reply::Integer(0),
        Err(reply) => reply,
    }
}

/// `XRANGE key start end [COUNT count]`: entries from `start` to `end`.
pub(crate) fn xrange(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    range(x, args, false)
}

/// `XREVRANGE key end start [COUNT count]`: `XRANGE` from the end.
pub(crate) fn xrevrange(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    range(x, args, true)
}

fn range(x: &mut Exec<'_>, args: &mut [Vec<u8>], rev: bool) -> Reply {
    let (start, end) = if rev {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let start = match parse_bound(start, true) {
        Ok(id) => id,
        Err(reply) => return reply,
    };
    let end = match parse_bound(end, false) {
        Ok(id) => id,
        Err(reply) => return reply,
    };
    let mut count = None;
    let mut at = 4;
    while at < args.len() {
        if args[at].eq_ignore_ascii_case(b"COUNT") && at + 1 < args.len() {
            match parse_i64(&args[at + 1]) {
                Some(n) => count = Some(n.max(0) as usize),
                None => return errors::not_integer(),
            }
            at += 2;
        } else {
            return errors::syntax();
        }
    }
    match x.read_stream(&args[1]) {
        Ok(Some(_)) => {}
        Ok(None) => return Reply::array(Vec::new()),
        Err(reply) => return reply,
    }
    if count == Some(0) {
        // Redis 7.0 answers a null array here (an empty one without the key).
        return Reply::Array(None);
    }
    let Some(stream) = x.store.get(&args[1]).and_then(|e| e.stream()) else {
        return Reply::array(Vec::new());
    };
    let count = count.unwrap_or(usize::MAX);
    let config = &*x.config;
    match rev {
        false => entries_reply(config, stream.range(start, end).take(count)),
        true => entries_reply(config, stream.range(start, end).rev().take(count)),
    }
}

/// `XDEL key id [id ...]`: removes entries; how many existed.
pub(crate) fn xdel(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    // As Redis: the key first (none deletes nothing, whatever the IDs).
    let key = &args[1];
    match x.live_stream(key) {
        Ok(Some(_)) => {}
        Ok(None) => return Reply::Integer(0),
        Err(reply) => return reply,
    }
    let mut ids = Vec::new();
    for arg in &args[2..] {
        match parse_id(arg, 0) {
            Ok(id) => ids.push(id),
            Err(reply) => return reply,
        }
    }
    let removed = x
        .store
        .update_stream(key, false, |s| {
            let mut removed = Vec::new();
            for id in ids {
                if s.remove(id) {
                    s.max_deleted = s.max_deleted.max(id);
                    removed.push(id.format());
                }
            }
            removed
        })
        .unwrap_or_default();
    if !removed.is_empty() {
        let mut record: Vec<&[u8]> = alloc::vec![b"XDEL", key];
        record.extend(removed.iter().map(Vec::as_slice));
        x.log(&record);
        x.notify(notify::STREAM, "xdel", key);
    }
    Reply::Integer(removed.len() as i64)
}

/// `XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]`: removes the
/// oldest entries; how many.
pub(crate) fn xtrim(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut trim = TrimArgs::default();
    let mut at = 2;
    while at < args.len() {
        match trim.parse(args, at) {
            Ok(Some(next)) => at = next,
            Ok(None) => return errors::syntax(),
            Err(reply) => return reply,
        }
    }
    if trim.how.is_none() {
        return Reply::error("ERR syntax error, XTRIM must be called with a trimming strategy");
    }
    if let Err(reply) = trim.check() {
        return reply;
    }
    let key = args[1].clone();
    match x.live_stream(&key) {
        Ok(Some(_)) => Reply::Integer(trim_logged(x, &key, &trim) as i64),
        Ok(None) => Reply::Integer(0),
        Err(reply) => reply,
    }
}

/// `XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID
/// max-deleted-id]`: sets the stream's last ID and counters.
pub(crate) fn xsetid(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let id = match parse_id(&args[2], 0) {
        Ok(id) => id,
        Err(reply) => return reply,
    };
    let (mut added, mut deleted) = (None, None);
    let mut at = 3;
    while at < args.len() {
        let word = args[at].to_ascii_uppercase();
        if at + 1 >= args.len() {
            return errors::syntax();
        }
        match word.as_slice() {
            b"ENTRIESADDED" => match parse_i64(&args[at + 1]) {
                Some(n) if n >= 0 => added = Some(n as u64),
                Some(_) => return Reply::error("ERR entries_added must be positive"),
                None => return errors::not_integer(),
            },
            b"MAXDELETEDID" => match parse_id(&args[at + 1], 0) {
                Ok(max) if id < max => {
                    return Reply::error(
                        "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                    )
                }
                Ok(max) => deleted = Some(max),
                Err(reply) => return reply,
            },
            _ => return errors::syntax(),
        }
        at += 2;
    }
    let key = args[1].clone();
    let stream = match x.live_stream(&key) {
        Ok(Some(stream)) => stream,
        Ok(None) => return Reply::error("ERR no such key"),
        Err(reply) => return reply,
    };
    if added.is_some_and(|n| n < stream.len() as u64) {
        return Reply::error(
            "ERR The entries_added specified in XSETID is smaller than the target stream length",
        );
    }
    if stream.last().is_some_and(|(top, _)| id < top) {
        return Reply::error(
            "ERR The ID specified in XSETID is smaller than the target stream top item",
        );
    }
    x.store.update_stream(&key, false, |s| {
        s.last_id = id;
        if let Some(n) = added {
            s.entries_added = n;
        }
        if let Some(max) = deleted {
            s.max_deleted = max;
        }
    });
    x.log_stream_change(&key, &*args);
    x.notify(notify::STREAM, "xsetid", &key);
    Reply::ok()
}

/// The options of `XREAD` and `XREADGROUP`, and where their keys and IDs
/// are.
pub(super) struct ReadArgs {
    /// Most entries per stream; `None`: all.
    pub count: Option<usize>,
    /// `BLOCK`: milliseconds (0: forever).
    pub block: Option<u64>,
    /// `NOACK` (groups only).
    pub noack: bool,
    /// `GROUP group consumer` (`XREADGROUP`).
    pub group: Option<(Vec<u8>, Vec<u8>)>,
    /// The index of the first key.
    pub keys_at: usize,
    /// How many keys (and as many IDs after them).
    pub streams: usize,
}

/// Parses `[COUNT n] [BLOCK ms] [NOACK] [GROUP g c] STREAMS key ... id
/// ...`; `group` for `XREADGROUP`, which needs the group.
pub(super) fn parse_read(args: &[Vec<u8>], group: bool) -> Result<ReadArgs, Reply> {
    let mut read = ReadArgs {
        count: None,
        block: None,
        noack: false,
        group: None,
        keys_at: 0,
        streams: 0,
    };
    let mut at = 1;
    while at < args.len() {
        let word = args[at].to_ascii_uppercase();
        let more = args.len() - at - 1;
        match word.as_slice() {
            b"STREAMS" if more > 0 => {
                let rest = args.len() - at - 1;
                if !rest.is_multiple_of(2) {
                    // Redis 7.0 names XREAD here for XREADGROUP too.
                    return Err(Reply::Error(
                        "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.".into(),
                    ));
                }
                read.keys_at = at + 1;
                read.streams = rest / 2;
                break;
            }
            b"COUNT" if more > 0 => {
                let n = parse_i64(&args[at + 1]).ok_or_else(errors::not_integer)?;
                read.count = (n > 0).then_some(n as usize);
                at += 2;
            }
            b"BLOCK" if more > 0 => {
                let n = parse_i64(&args[at + 1])
                    .ok_or_else(|| Reply::error("ERR timeout is not an integer or out of range"))?;
                if n < 0 {
                    return Err(Reply::error("ERR timeout is negative"));
                }
                read.block = Some(n as u64);
                at += 2;
            }
            b"GROUP" if group && more > 1 => {
                read.group = Some((args[at + 1].clone(), args[at + 2].clone()));
                at += 3;
            }
            b"NOACK" if group => {
                read.noack = true;
                at += 1;
            }
            _ => return Err(errors::syntax()),
        }
    }
    if read.streams == 0 {
        return Err(errors::syntax());
    }
    if group && read.group.is_none() {
        return Err(Reply::error("ERR Missing GROUP option for XREADGROUP"));
    }
    Ok(read)
}

/// Makes the client wait up to `block` milliseconds for an `XADD` to one
/// of `keys` (in consumer group `group`, for `XREADGROUP`), if it may
/// block; else the null answer.
pub(super) fn wait_for_entries(
    x: &mut Exec<'_>,
    keys: Vec<Vec<u8>>,
    block: Option<u64>,
    group: Option<Vec<u8>>,
) -> Reply {
    let Some(ms) = block else {
        return Reply::Array(None);
    };
    if !x.may_block {
        return Reply::Array(None);
    }
    x.block_on(Wait {
        keys,
        kind: "stream",
        deadline: (ms > 0).then(|| x.now.saturating_add(ms)),
        timeout_reply: Reply::Array(None),
        group,
    });
    Reply::Array(None)
}

/// `XREAD [COUNT count] [BLOCK ms] STREAMS key [key ...] id [id ...]`:
/// the entries after each ID (`$`: after the stream's last), per stream
/// that has any; with `BLOCK`, waits for one if none has.
pub(crate) fn xread(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let read = match parse_read(args, false) {
        Ok(read) => read,
        Err(reply) => return reply,
    };
    let (keys_at, n) = (read.keys_at, read.streams);
    let mut after = Vec::with_capacity(n);
    for i in 0..n {
        // As Redis: each key's type before its ID.
        if let Err(reply) = x.read_stream(&args[keys_at + i]) {
            return reply;
        }
        let arg = &args[keys_at + n + i];
        match arg.as_slice() {
            b"$" => after.push(None),
            b">" => {
                return Reply::error(
                    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                )
            }
            _ => match parse_id(arg, 0) {
                Ok(id) => after.push(Some(id)),
                Err(reply) => return reply,
            },
        }
    }
    let mut out = Vec::new();
    for i in 0..n {
        let key = args[keys_at + i].clone();
        let stream = x.store.get(&key).and_then(|e| e.stream());
        let last = stream.map_or(StreamId::ZERO, |s| s.last_id);
        let from = match after[i] {
            Some(id) => id,
            None => {
                // `$` means the last ID now, also if the client waits.
                args[keys_at + n + i] = last.format();
                last
            }
        };
        let (Some(stream), Some(start)) = (stream, from.next()) else {
            continue;
        };
        let entries = stream
            .range(start, StreamId::MAX)
            .take(read.count.unwrap_or(usize::MAX));
        if entries.clone().next().is_none() {
            continue;
        }
        let reply = entries_reply(x.config, entries);
        if reply.is_error() {
            return reply;
        }
        out.extend([Reply::bulk(key), reply]);
    }
    if !out.is_empty() {
        return Reply::Keyed(out);
    }
    let keys = args[keys_at..keys_at + n].to_vec();
    wait_for_entries(x, keys, read.block, None)
}
