//! Consumer groups of streams: `XGROUP CREATE|SETID|DESTROY|
//! CREATECONSUMER|DELCONSUMER`, `XREADGROUP` (which may block until an
//! `XADD`), `XACK`, `XPENDING`, `XCLAIM`, `XAUTOCLAIM`, and `XINFO`.
//!
//! # What gets logged
//!
//! | command                           | logged as                                  |
//! |-----------------------------------|--------------------------------------------|
//! | `XGROUP CREATE` (`$`, `MKSTREAM`) | `XGROUP CREATE key g <the ID> [MKSTREAM] ENTRIESREAD <n or -1>` |
//! | `XGROUP SETID`                    | `XGROUP SETID key g <the ID> ENTRIESREAD <n or -1>` |
//! | `DESTROY`, `CREATECONSUMER`, `DELCONSUMER` | as given, if they changed something |
//! | `XREADGROUP` (`>`)                | `XGROUP CREATECONSUMER` if new, an `XCLAIM key g c 0 id TIME <now> RETRYCOUNT <n> FORCE JUSTID` per entry delivered (none with `NOACK`), then `XGROUP SETID key g <last delivered> ENTRIESREAD <n>` |
//! | `XREADGROUP` (history), `XCLAIM`, `XAUTOCLAIM` | that `XCLAIM` per entry (re)delivered; `XACK` of pending IDs whose entry was deleted and that they dropped |
//! | `XACK`                            | `XACK key g <the IDs acknowledged>`        |
//!
//! The delivery times in the records are absolute, so a replayed log
//! holds the same pending entries with the same times and counts.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::streams::{
    entries_reply, entry_reply, id_reply, parse_bound, parse_id, parse_read, wait_for_entries,
};
use crate::notify;
use crate::num::{format_i64, parse_i64};
use crate::resp::Reply;
use crate::store::{Group, StreamId};

/// `-ERR The XGROUP subcommand requires the key to exist...`.
fn key_needed() -> Reply {
    Reply::error("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
}

/// `-NOGROUP No such consumer group 'g' for key name 'k'`.
fn no_group_for(key: &[u8], group: &[u8]) -> Reply {
    Reply::Error(format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        errors::c_string(group),
        errors::c_string(key)
    ))
}

/// `-NOGROUP No such key 'k' or consumer group 'g'` and a `suffix`.
fn no_key_or_group(key: &[u8], group: &[u8], suffix: &str) -> Reply {
    Reply::Error(format!(
        "NOGROUP No such key '{}' or consumer group '{}'{suffix}",
        errors::c_string(key),
        errors::c_string(group)
    ))
}

/// The group `name` of the stream at `key`, checked: `Ok(None)` if the key
/// is missing or has no such group, `WRONGTYPE` for another type.
fn group_of<'a>(x: &'a mut Exec<'_>, key: &[u8], name: &[u8]) -> Result<Option<&'a Group>, Reply> {
    Ok(x.live_stream(key)?.and_then(|s| s.groups.get(name)))
}

/// Checks, for an `XGROUP` consumer subcommand, that the stream at `key`
/// has group `name`: the error Redis gives when the key or the group is
/// missing, `WRONGTYPE` for another type.
fn existing_group(x: &mut Exec<'_>, key: &[u8], name: &[u8]) -> Result<(), Reply> {
    if group_of(x, key, name)?.is_some() {
        Ok(())
    } else if x.store.get(key).is_some() {
        Err(no_group_for(key, name))
    } else {
        Err(key_needed())
    }
}

/// An entries-read counter as logged: the number, or -1 when unknown.
fn read_text(read: Option<u64>) -> Vec<u8> {
    format_i64(read.map_or(-1, |n| n as i64))
}

/// Changes group `name` of the stream at `key` with `change` (the
/// caller checked both exist).
fn with_group<R>(
    x: &mut Exec<'_>,
    key: &[u8],
    name: &[u8],
    change: impl FnOnce(&mut crate::store::Stream, &[u8]) -> R,
) -> Option<R> {
    x.store.update_stream(key, false, |s| change(s, name))
}

/// Logs one (re)delivery of `id` to `consumer` as the `XCLAIM` that
/// recreates it.
fn log_claim(x: &mut Exec<'_>, key: &[u8], group: &[u8], consumer: &[u8], id: StreamId) {
    let (time, count) = match x
        .store
        .get(key)
        .and_then(|e| e.stream())
        .and_then(|s| s.groups.get(group))
        .and_then(|g| g.pending.get(&id))
    {
        Some(p) => (p.delivered_ms, p.deliveries),
        None => return,
    };
    let id = id.format();
    let time = format_i64(time as i64);
    let count = format_i64(count as i64);
    x.log_stream_change(
        key,
        [
            &b"XCLAIM"[..],
            key,
            group,
            consumer,
            b"0",
            &id,
            b"TIME",
            &time,
            b"RETRYCOUNT",
            &count,
            b"FORCE",
            b"JUSTID",
        ],
    );
}

/// Logs where group `name` stands: `XGROUP SETID` with its counter.
fn log_setid(x: &mut Exec<'_>, key: &[u8], name: &[u8]) {
    let Some(group) = x
        .store
        .get(key)
        .and_then(|e| e.stream())
        .and_then(|s| s.groups.get(name))
    else {
        return;
    };
    let id = group.last_id.format();
    let read = read_text(group.entries_read);
    x.log_stream_change(
        key,
        [
            &b"XGROUP"[..],
            b"SETID",
            key,
            name,
            &id,
            b"ENTRIESREAD",
            &read,
        ],
    );
}

/// The ID argument of `XGROUP CREATE|SETID`: `$` or an ID, and for SETID
/// (`ends`) also `-`/`+`, the smallest and largest IDs (Redis 7.0 refuses
/// them to CREATE).
fn group_id(arg: &[u8], last: StreamId, ends: bool) -> Result<StreamId, Reply> {
    match arg {
        b"$" => Ok(last),
        b"-" if ends => Ok(StreamId::ZERO),
        b"+" if ends => Ok(StreamId::MAX),
        _ => parse_id(arg, 0),
    }
}

/// Parses `ENTRIESREAD n` (and, for `CREATE`, `MKSTREAM`) from `args[5..]`.
fn group_options(args: &[Vec<u8>], create: bool) -> Result<(bool, Option<Option<u64>>), Reply> {
    let (mut mkstream, mut read) = (false, None);
    // The subcommand as the client typed it, as Redis echoes it.
    let sub = errors::lossy(&args[1][..args[1].len().min(128)]);
    let mut at = 5;
    while at < args.len() {
        let word = args[at].to_ascii_uppercase();
        match word.as_slice() {
            b"MKSTREAM" if create => at += 1,
            b"ENTRIESREAD" if at + 1 < args.len() => {
                let n = parse_i64(&args[at + 1]).ok_or_else(errors::not_integer)?;
                if n < -1 {
                    return Err(Reply::error(
                        "ERR value for ENTRIESREAD must be positive or -1",
                    ));
                }
                read = Some((n >= 0).then_some(n as u64));
                at += 2;
                continue;
            }
            _ => {
                return Err(Reply::Error(format!(
                "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try XGROUP HELP."
            )))
            }
        }
        mkstream = true;
    }
    Ok((mkstream, read))
}

/// `XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n]`.
pub(crate) fn xgroup_create(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (mkstream, read) = match group_options(args, true) {
        Ok(options) => options,
        Err(reply) => return reply,
    };
    let (key, name) = (args[2].clone(), args[3].clone());
    // The key, then the ID, then the group's name, as Redis checks them.
    let (last, exists, busy) = match x.live_stream(&key) {
        Ok(Some(stream)) => (stream.last_id, true, stream.groups.contains_key(&name)),
        Ok(None) if mkstream => (StreamId::ZERO, false, false),
        Ok(None) => return key_needed(),
        Err(reply) => return reply,
    };
    let id = match group_id(&args[4], last, false) {
        Ok(id) => id,
        Err(reply) => return reply,
    };
    if busy {
        return Reply::error("BUSYGROUP Consumer Group name already exists");
    }
    let read = read.flatten();
    x.store.update_stream(&key, true, |s| {
        s.groups.insert(name.clone(), Group::new(id, read));
    });
    let (id_text, read_text) = (id.format(), read_text(read));
    let mut record: Vec<&[u8]> = alloc::vec![b"XGROUP", b"CREATE", &key, &name, &id_text];
    if !exists {
        record.push(b"MKSTREAM");
    }
    record.extend([&b"ENTRIESREAD"[..], &read_text]);
    x.log_stream_change(&key, &record);
    x.notify(notify::STREAM, "xgroup-create", &key);
    Reply::ok()
}

/// `XGROUP SETID key group id|$ [ENTRIESREAD n]`.
pub(crate) fn xgroup_setid(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (_, read) = match group_options(args, false) {
        Ok(options) => options,
        Err(reply) => return reply,
    };
    let (key, name) = (args[2].clone(), args[3].clone());
    let last = match x.live_stream(&key) {
        Ok(Some(stream)) if stream.groups.contains_key(&name) => stream.last_id,
        Ok(Some(_)) => return no_group_for(&key, &name),
        Ok(None) => return key_needed(),
        Err(reply) => return reply,
    };
    let id = match group_id(&args[4], last, true) {
        Ok(id) => id,
        Err(reply) => return reply,
    };
    with_group(x, &key, &name, |s, name| {
        if let Some(group) = s.groups.get_mut(name) {
            group.last_id = id;
            group.entries_read = read.flatten();
        }
    });
    log_setid(x, &key, &name);
    x.notify(notify::STREAM, "xgroup-setid", &key);
    Reply::ok()
}

/// `XGROUP DESTROY key group`: 1 if the group existed. Clients blocked
/// reading from it are answered `-NOGROUP`.
pub(crate) fn xgroup_destroy(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (key, name) = (args[2].clone(), args[3].clone());
    match x.live_stream(&key) {
        Ok(Some(_)) => {}
        Ok(None) => return key_needed(),
        Err(reply) => return reply,
    }
    let removed = x
        .store
        .update_stream(&key, false, |s| s.groups.remove(&name).is_some())
        .unwrap_or(false);
    if removed {
        x.log_stream_change(&key, &*args);
        x.notify(notify::STREAM, "xgroup-destroy", &key);
        x.key_ready(&key);
    }
    Reply::Integer(i64::from(removed))
}

/// `XGROUP CREATECONSUMER key group consumer`: 1 if it was created.
pub(crate) fn xgroup_createconsumer(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (key, name, consumer) = (args[2].clone(), args[3].clone(), args[4].clone());
    if let Err(reply) = existing_group(x, &key, &name) {
        return reply;
    }
    let now = x.now;
    let created = with_group(x, &key, &name, |s, name| {
        let group = s.groups.get_mut(name)?;
        if group.consumers.contains_key(&consumer) {
            return Some(false);
        }
        group.consumers.insert(
            consumer.clone(),
            crate::store::Consumer {
                seen_ms: now,
                pending: Default::default(),
            },
        );
        Some(true)
    })
    .flatten()
    .unwrap_or(false);
    if created {
        x.log_stream_change(&key, &*args);
        x.notify(notify::STREAM, "xgroup-createconsumer", &key);
    }
    Reply::Integer(i64::from(created))
}

/// `XGROUP DELCONSUMER key group consumer`: how many entries were
/// pending for it (they are pending no more).
pub(crate) fn xgroup_delconsumer(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (key, name, consumer) = (args[2].clone(), args[3].clone(), args[4].clone());
    if let Err(reply) = existing_group(x, &key, &name) {
        return reply;
    }
    let removed = with_group(x, &key, &name, |s, name| {
        let group = s.groups.get_mut(name)?;
        let gone = group.consumers.remove(&consumer)?;
        for id in &gone.pending {
            group.pending.remove(id);
        }
        Some(gone.pending.len())
    })
    .flatten();
    if let Some(n) = removed {
        x.log_stream_change(&key, &*args);
        x.notify(notify::STREAM, "xgroup-delconsumer", &key);
        return Reply::Integer(n as i64);
    }
    Reply::Integer(0)
}

/// `XGROUP HELP`.
pub(crate) fn xgroup_help(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::help(&[
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Prints this help.",
    ])
}

/// Makes sure `consumer` exists in the group (logging its creation) and
/// marks it seen now.
fn touch_consumer(x: &mut Exec<'_>, key: &[u8], name: &[u8], consumer: &[u8]) {
    let now = x.now;
    let created = with_group(x, key, name, |s, name| {
        let group = s.groups.get_mut(name)?;
        let created = !group.consumers.contains_key(consumer);
        group
            .consumers
            .entry(consumer.to_vec())
            .or_default()
            .seen_ms = now;
        Some(created)
    })
    .flatten()
    .unwrap_or(false);
    if created {
        x.log_stream_change(
            key,
            [&b"XGROUP"[..], b"CREATECONSUMER", key, name, consumer],
        );
        x.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
}

/// `XREADGROUP GROUP group consumer [COUNT n] [BLOCK ms] [NOACK] STREAMS
/// key [key ...] id [id ...]`: with `>`, the entries no consumer of the
/// group got yet (now pending for this one unless `NOACK`); with an ID,
/// this consumer's pending entries after it. Blocks like `XREAD` when
/// every stream is read with `>` and none has new entries.
pub(crate) fn xreadgroup(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let read = match parse_read(args, true) {
        Ok(read) => read,
        Err(reply) => return reply,
    };
    let Some((name, consumer)) = read.group.clone() else {
        return errors::syntax();
    };
    let (keys_at, n) = (read.keys_at, read.streams);
    // Keys and groups first, as Redis checks them before the IDs.
    for i in 0..n {
        let key = args[keys_at + i].clone();
        match group_of(x, &key, &name) {
            Ok(Some(_)) => {}
            Ok(None) => return no_key_or_group(&key, &name, " in XREADGROUP with GROUP option"),
            Err(reply) => return reply,
        }
    }
    let mut after = Vec::with_capacity(n);
    for arg in &args[keys_at + n..] {
        match arg.as_slice() {
            b">" => after.push(None),
            b"$" => return Reply::error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."),
            _ => match parse_id(arg, 0) {
                Ok(id) => after.push(Some(id)),
                Err(reply) => return reply,
            },
        }
    }
    let count = read.count.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    for i in 0..n {
        let key = args[keys_at + i].clone();
        touch_consumer(x, &key, &name, &consumer);
        let now = x.now;
        match after[i] {
            None => {
                let noack = read.noack;
                let delivered = with_group(x, &key, &name, |s, name| {
                    let last = s.groups.get(name)?.last_id;
                    let start = last.next()?;
                    let ids: Vec<StreamId> = s
                        .range(start, StreamId::MAX)
                        .take(count)
                        .map(|(id, _)| id)
                        .collect();
                    for &id in &ids {
                        let tombstones = s.deleted_after(id);
                        let distance = s.distance_from_first(id);
                        let added = s.entries_added;
                        let group = s.groups.get_mut(name)?;
                        group.entries_read = match group.entries_read {
                            Some(read) if !tombstones => Some(read + 1),
                            _ if added > 0 => distance,
                            other => other,
                        };
                        group.last_id = id;
                        if !noack {
                            group.assign(id, &consumer, now, 1);
                        }
                    }
                    Some(ids)
                })
                .flatten()
                .unwrap_or_default();
                if delivered.is_empty() {
                    continue;
                }
                if !noack {
                    for &id in &delivered {
                        log_claim(x, &key, &name, &consumer, id);
                    }
                }
                log_setid(x, &key, &name);
                let Some(stream) = x.store.get(&key).and_then(|e| e.stream()) else {
                    continue;
                };
                let entries = delivered
                    .iter()
                    .filter_map(|id| stream.get(*id).map(|f| (*id, f)));
                let reply = entries_reply(x.config, entries.collect::<Vec<_>>().into_iter());
                if reply.is_error() {
                    return reply;
                }
                out.extend([Reply::bulk(key), reply]);
            }
            Some(from) => {
                let ids: Vec<StreamId> = with_group(x, &key, &name, |s, name| {
                    let start = from.next()?;
                    let group = s.groups.get_mut(name)?;
                    let mine = group.consumers.get(&consumer)?;
                    let ids: Vec<StreamId> =
                        mine.pending.range(start..).take(count).copied().collect();
                    let exists: Vec<bool> = ids.iter().map(|id| s.get(*id).is_some()).collect();
                    let group = s.groups.get_mut(name)?;
                    for (id, exists) in ids.iter().zip(exists) {
                        if let (true, Some(p)) = (exists, group.pending.get_mut(id)) {
                            p.delivered_ms = now;
                            p.deliveries += 1;
                        }
                    }
                    Some(ids)
                })
                .flatten()
                .unwrap_or_default();
                let mut items = Vec::new();
                for &id in &ids {
                    let fields = x
                        .store
                        .get(&key)
                        .and_then(|e| e.stream())
                        .and_then(|s| s.get(id));
                    let exists = fields.is_some();
                    let item = match fields {
                        Some(fields) => match entry_reply(id, fields) {
                            Ok(item) => item,
                            Err(reply) => return reply,
                        },
                        None => Reply::array(alloc::vec![id_reply(id), Reply::Array(None)]),
                    };
                    items.push(item);
                    if exists {
                        // Only redelivered entries changed (a deleted one
                        // stays pending as it was).
                        log_claim(x, &key, &name, &consumer, id);
                    }
                }
                out.extend([Reply::bulk(key), Reply::array(items)]);
            }
        }
    }
    if !out.is_empty() {
        return Reply::Keyed(out);
    }
    if after.iter().any(Option::is_some) {
        return Reply::Array(None);
    }
    let keys = args[keys_at..keys_at + n].to_vec();
    wait_for_entries(x, keys, read.block, Some(name))
}

/// `XACK key group id [id ...]`: how many of the IDs were pending (they
/// are no more).
pub(crate) fn xack(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    // As Redis: the key's type first, then no key or group acks nothing
    // (whatever the IDs), then the IDs.
    let (key, name) = (args[1].clone(), args[2].clone());
    match group_of(x, &key, &name) {
        Ok(Some(_)) => {}
        Ok(None) => return Reply::Integer(0),
        Err(reply) => return reply,
    }
    let mut ids = Vec::new();
    for arg in &args[3..] {
        match parse_id(arg, 0) {
            Ok(id) => ids.push(id),
            Err(reply) => return reply,
        }
    }
    let acked: Vec<Vec<u8>> = with_group(x, &key, &name, |s, name| {
        let group = s.groups.get_mut(name)?;
        Some(
            ids.iter()
                .filter(|id| group.ack(**id))
                .map(|id| id.format())
                .collect(),
        )
    })
    .flatten()
    .unwrap_or_default();
    if !acked.is_empty() {
        let mut record: Vec<&[u8]> = alloc::vec![b"XACK", &key, &name];
        record.extend(acked.iter().map(Vec::as_slice));
        x.log(&record);
    }
    Reply::Integer(acked.len() as i64)
}

/// `XPENDING key group [[IDLE min-idle] start end count [consumer]]`: a
/// summary of the group's pending entries, or the entries themselves.
pub(crate) fn xpending(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let extended = args.len() > 3;
    if extended && !(6..=9).contains(&args.len()) {
        return errors::syntax();
    }
    let mut at = 3;
    let mut min_idle = 0u64;
    if extended && args[3].eq_ignore_ascii_case(b"IDLE") {
        match parse_i64(&args[4]) {
            Some(n) => min_idle = n.max(0) as u64,
            None => return errors::not_integer(),
        }
        at = 5;
    }
    let (mut start, mut end, mut count, mut only) = (StreamId::ZERO, StreamId::MAX, 0, None);
    if extended {
        if args.len() < at + 3 || args.len() > at + 4 {
            return errors::syntax();
        }
        start = match parse_bound(&args[at], true) {
            Ok(id) => id,
            Err(reply) => return reply,
        };
        end = match parse_bound(&args[at + 1], false) {
            Ok(id) => id,
            Err(reply) => return reply,
        };
        count = match parse_i64(&args[at + 2]) {
            Some(n) => n.max(0) as usize,
            None => return errors::not_integer(),
        };
        only = args.get(at + 3).cloned();
    }
    let (key, name) = (args[1].clone(), args[2].clone());
    let now = x.now;
    let group = match group_of(x, &key, &name) {
        Ok(Some(group)) => group,
        Ok(None) => return no_key_or_group(&key, &name, ""),
        Err(reply) => return reply,
    };
    if !extended {
        let (Some(first), Some(last)) = (
            group.pending.keys().next(),
            group.pending.keys().next_back(),
        ) else {
            return Reply::array(alloc::vec![
                Reply::Integer(0),
                Reply::nil(),
                Reply::nil(),
                Reply::Array(None)
            ]);
        };
        let consumers: Vec<Reply> = group
            .consumers
            .iter()
            .filter(|(_, c)| !c.pending.is_empty())
            .map(|(name, c)| {
                Reply::array(alloc::vec![
                    Reply::bulk(name.clone()),
                    Reply::bulk(format_i64(c.pending.len() as i64)),
                ])
            })
            .collect();
        return Reply::array(alloc::vec![
            Reply::Integer(group.pending.len() as i64),
            id_reply(*first),
            id_reply(*last),
            Reply::array(consumers),
        ]);
    }
    if start > end {
        return Reply::array(Vec::new());
    }
    let items: Vec<Reply> = group
        .pending
        .range(start..=end)
        .filter(|(_, p)| only.as_ref().is_none_or(|c| *c == p.consumer))
        .filter(|(_, p)| now.saturating_sub(p.delivered_ms) >= min_idle)
        .take(count)
        .map(|(id, p)| {
            Reply::array(alloc::vec![
                id_reply(*id),
                Reply::bulk(p.consumer.clone()),
                Reply::Integer(now.saturating_sub(p.delivered_ms) as i64),
                Reply::Integer(p.deliveries as i64),
            ])
        })
        .collect();
    Reply::array(items)
}

/// Claims `id` for `consumer` of group `name` if it is pending (for
/// `force`, even if not, as long as the entry exists) and idle at least
/// `min_idle`; a pending ID whose entry was deleted is dropped. Returns
/// `Some(true)` if claimed, `Some(false)` if dropped, `None` if left.
#[allow(clippy::too_many_arguments)]
fn claim(
    x: &mut Exec<'_>,
    key: &[u8],
    name: &[u8],
    consumer: &[u8],
    id: StreamId,
    min_idle: u64,
    time: u64,
    retry: Option<u64>,
    force: bool,
    justid: bool,
) -> Option<bool> {
    let now = x.now;
    let known = with_group(x, key, name, |s, name| {
        s.groups
            .get(name)
            .map(|g| g.consumers.contains_key(consumer))
    })
    .flatten()
    .unwrap_or(true);
    let outcome = with_group(x, key, name, |s, name| {
        let exists = s.get(id).is_some();
        let group = s.groups.get_mut(name)?;
        let pending = group.pending.get(&id).cloned();
        if !exists {
            if pending.is_some() {
                group.ack(id);
                return Some(false);
            }
            return None;
        }
        let deliveries = match &pending {
            Some(p) if now.saturating_sub(p.delivered_ms) < min_idle => return None,
            Some(p) => p.deliveries,
            None if force => 0,
            None => return None,
        };
        let deliveries = match retry {
            Some(n) => n,
            None if justid => deliveries,
            None => deliveries + 1,
        };
        group.assign(id, consumer, time, deliveries);
        if let Some(c) = group.consumers.get_mut(consumer) {
            c.seen_ms = now;
        }
        Some(true)
    })
    .flatten();
    match outcome {
        Some(true) => {
            log_claim(x, key, name, consumer, id);
            if !known {
                // The claim made the consumer, as Redis tells.
                x.notify(notify::STREAM, "xgroup-createconsumer", key);
            }
        }
        Some(false) => {
            let text = id.format();
            x.log([&b"XACK"[..], key, name, &text]);
        }
        None => {}
    }
    outcome
}

/// `XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME
/// ms] [RETRYCOUNT n] [FORCE] [JUSTID] [LASTID id]`: takes pending entries
/// idle long enough over for `consumer`; the entries (or IDs) claimed.
pub(crate) fn xclaim(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    // As Redis: the key and the group before any argument.
    let (key, name, consumer) = (args[1].clone(), args[2].clone(), args[3].clone());
    match group_of(x, &key, &name) {
        Ok(Some(_)) => {}
        Ok(None) => return no_key_or_group(&key, &name, ""),
        Err(reply) => return reply,
    }
    let min_idle = match parse_i64(&args[4]) {
        Some(n) => n.max(0) as u64,
        None => return Reply::error("ERR Invalid min-idle-time argument for XCLAIM"),
    };
    let mut ids = Vec::new();
    let mut at = 5;
    while at < args.len() {
        match StreamId::parse(&args[at], 0) {
            Some(id) => ids.push(id),
            None => break,
        }
        at += 1;
    }
    let now = x.now;
    let (mut time, mut retry, mut force, mut justid, mut lastid) = (now, None, false, false, None);
    while at < args.len() {
        let word = args[at].to_ascii_uppercase();
        let value = args.get(at + 1);
        match (word.as_slice(), value) {
            (b"FORCE", _) => force = true,
            (b"JUSTID", _) => justid = true,
            (b"IDLE", Some(v)) => {
                match parse_i64(v) {
                    Some(ms) => time = now.saturating_sub(ms.max(0) as u64),
                    None => return Reply::error("ERR Invalid IDLE option argument for XCLAIM"),
                }
                at += 1;
            }
            (b"TIME", Some(v)) => {
                match parse_i64(v) {
                    Some(ms) => time = ms.max(0) as u64,
                    None => return Reply::error("ERR Invalid TIME option argument for XCLAIM"),
                }
                at += 1;
            }
            (b"RETRYCOUNT", Some(v)) => {
                match parse_i64(v) {
                    Some(n) => retry = Some(n.max(0) as u64),
                    None => {
                        return Reply::error("ERR Invalid RETRYCOUNT option argument for XCLAIM")
                    }
                }
                at += 1;
            }
            (b"LASTID", Some(v)) => {
                match parse_id(v, 0) {
                    Ok(id) => lastid = Some(id),
                    Err(reply) => return reply,
                }
                at += 1;
            }
            _ => {
                return Reply::Error(format!(
                    "ERR Unrecognized XCLAIM option '{}'",
                    String::from_utf8_lossy(&args[at])
                ))
            }
        }
        at += 1;
    }
    if let Some(last) = lastid {
        let moved = with_group(x, &key, &name, |s, name| {
            let group = s.groups.get_mut(name)?;
            (last > group.last_id).then(|| group.last_id = last)
        })
        .flatten();
        if moved.is_some() {
            log_setid(x, &key, &name);
        }
    }
    let mut out = Vec::new();
    for id in ids {
        if claim(
            x, &key, &name, &consumer, id, min_idle, time, retry, force, justid,
        ) != Some(true)
        {
            continue;
        }
        match claimed_reply(x, &key, id, justid) {
            Ok(Some(item)) => out.push(item),
            Ok(None) => {}
            Err(reply) => return reply,
        }
    }
    Reply::array(out)
}

/// `XAUTOCLAIM key group consumer min-idle-time start [COUNT count]
/// [JUSTID]`: `XCLAIM` of the pending entries from `start` on that are
/// idle long enough; the cursor to go on from, the entries (or IDs)
/// claimed, and the IDs dropped because their entries were deleted.
pub(crate) fn xautoclaim(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let min_idle = match parse_i64(&args[4]) {
        Some(n) => n.max(0) as u64,
        None => return Reply::error("ERR Invalid min-idle-time argument for XAUTOCLAIM"),
    };
    let start = match parse_bound(&args[5], true) {
        Ok(id) => id,
        Err(reply) => return reply,
    };
    let (mut count, mut justid) = (100u64, false);
    let mut at = 6;
    while at < args.len() {
        let word = args[at].to_ascii_uppercase();
        match word.as_slice() {
            b"JUSTID" => justid = true,
            b"COUNT" if at + 1 < args.len() => {
                match parse_i64(&args[at + 1]) {
                    Some(n) if (1..=i64::MAX / 10).contains(&n) => count = n as u64,
                    Some(_) => return Reply::error("ERR COUNT must be > 0"),
                    None => return errors::not_integer(),
                }
                at += 1;
            }
            _ => return errors::syntax(),
        }
        at += 1;
    }
    let (key, name, consumer) = (args[1].clone(), args[2].clone(), args[3].clone());
    let pending: Vec<StreamId> = match group_of(x, &key, &name) {
        Ok(Some(group)) => group
            .pending
            .range(start..)
            .take((count * 10) as usize)
            .map(|(id, _)| *id)
            .collect(),
        Ok(None) => return no_key_or_group(&key, &name, ""),
        Err(reply) => return reply,
    };
    let now = x.now;
    let (mut claimed, mut deleted) = (Vec::new(), Vec::new());
    // COUNT bounds the reply: a deleted entry dropped from the list counts
    // as one claimed does (Redis 7.0).
    let mut examined = 0;
    for &id in &pending {
        if (claimed.len() + deleted.len()) as u64 >= count {
            break;
        }
        examined += 1;
        match claim(
            x, &key, &name, &consumer, id, min_idle, now, None, false, justid,
        ) {
            Some(true) => claimed.push(id),
            Some(false) => deleted.push(id),
            None => {}
        }
    }
    // The cursor: the pending ID after the last one examined, 0-0 at the
    // end of the list.
    let next = match pending.get(examined) {
        Some(&id) => id,
        None => {
            let after = pending.last().and_then(|id| id.next());
            match (after, group_of(x, &key, &name)) {
                (Some(after), Ok(Some(group))) => group
                    .pending
                    .range(after..)
                    .next()
                    .map_or(StreamId::ZERO, |(id, _)| *id),
                _ => StreamId::ZERO,
            }
        }
    };
    let mut items = Vec::new();
    for id in claimed {
        match claimed_reply(x, &key, id, justid) {
            Ok(Some(item)) => items.push(item),
            Ok(None) => {}
            Err(reply) => return reply,
        }
    }
    Reply::array(alloc::vec![
        id_reply(next),
        Reply::array(items),
        Reply::array(deleted.into_iter().map(id_reply).collect()),
    ])
}

/// What XCLAIM and XAUTOCLAIM answer for a claimed entry `id` of the
/// stream at `key`: its ID (JUSTID), or the entry itself; `None` when the
/// entry was deleted since.
fn claimed_reply(
    x: &Exec<'_>,
    key: &[u8],
    id: StreamId,
    justid: bool,
) -> Result<Option<Reply>, Reply> {
    if justid {
        return Ok(Some(id_reply(id)));
    }
    let fields = x
        .store
        .get(key)
        .and_then(|e| e.stream())
        .and_then(|s| s.get(id));
    fields.map(|fields| entry_reply(id, fields)).transpose()
}

/// The stream at `key` for `XINFO`: `-ERR no such key` if missing.
fn info_stream<'a>(x: &'a mut Exec<'_>, key: &[u8]) -> Result<&'a crate::store::Stream, Reply> {
    x.read_stream(key)?
        .ok_or_else(|| Reply::error("ERR no such key"))
}

/// An entries-read counter or a lag as `XINFO` answers it: nil when not
/// known.
fn maybe(n: Option<u64>) -> Reply {
    n.map_or(Reply::nil(), |n| Reply::Integer(n as i64))
}

/// An entry or nil, for `XINFO STREAM`'s first and last entries.
fn maybe_entry(entry: Option<(StreamId, &[Vec<u8>])>) -> Result<Reply, Reply> {
    match entry {
        Some((id, fields)) => entry_reply(id, fields),
        None => Ok(Reply::nil()),
    }
}

/// `XINFO STREAM key [FULL [COUNT count]]`: the stream's counters, first
/// and last entries; with `FULL`, its entries (10, or `COUNT`; 0: all)
/// and every group with its PEL and consumers.
pub(crate) fn xinfo_stream(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut full = false;
    let mut count = 10usize;
    let mut at = 3;
    while at < args.len() {
        let word = args[at].to_ascii_uppercase();
        match word.as_slice() {
            b"FULL" if at == 3 => full = true,
            b"COUNT" if full && at + 1 < args.len() => {
                match parse_i64(&args[at + 1]) {
                    Some(n) => count = if n <= 0 { usize::MAX } else { n as usize },
                    None => return errors::not_integer(),
                }
                at += 1;
            }
            _ => return errors::syntax(),
        }
        at += 1;
    }
    let key = args[2].clone();
    let config = x.config.clone();
    let stream = match info_stream(x, &key) {
        Ok(stream) => stream,
        Err(reply) => return reply,
    };
    let mut map = alloc::vec![
        Reply::bulk("length"),
        Reply::Integer(stream.len() as i64),
        Reply::bulk("radix-tree-keys"),
        Reply::Integer(stream.node_count() as i64),
        Reply::bulk("radix-tree-nodes"),
        Reply::Integer(stream.node_count() as i64 + 1),
        Reply::bulk("last-generated-id"),
        id_reply(stream.last_id),
        Reply::bulk("max-deleted-entry-id"),
        id_reply(stream.max_deleted),
        Reply::bulk("entries-added"),
        Reply::Integer(stream.entries_added as i64),
        Reply::bulk("recorded-first-entry-id"),
        id_reply(stream.first_id()),
    ];
    if !full {
        let (first, last) = match (maybe_entry(stream.first()), maybe_entry(stream.last())) {
            (Ok(first), Ok(last)) => (first, last),
            (Err(reply), _) | (_, Err(reply)) => return reply,
        };
        map.extend([
            Reply::bulk("groups"),
            Reply::Integer(stream.groups.len() as i64),
            Reply::bulk("first-entry"),
            first,
            Reply::bulk("last-entry"),
            last,
        ]);
        return Reply::Map(map);
    }
    let entries = entries_reply(
        &config,
        stream.range(StreamId::ZERO, StreamId::MAX).take(count),
    );
    if entries.is_error() {
        return entries;
    }
    let mut groups = Vec::new();
    for (name, group) in &stream.groups {
        let pending: Vec<Reply> = group
            .pending
            .iter()
            .take(count)
            .map(|(id, p)| {
                Reply::array(alloc::vec![
                    id_reply(*id),
                    Reply::bulk(p.consumer.clone()),
                    Reply::Integer(p.delivered_ms as i64),
                    Reply::Integer(p.deliveries as i64),
                ])
            })
            .collect();
        let consumers: Vec<Reply> = group
            .consumers
            .iter()
            .map(|(cname, c)| {
                let pending: Vec<Reply> = c
                    .pending
                    .iter()
                    .take(count)
                    .filter_map(|id| group.pending.get(id).map(|p| (id, p)))
                    .map(|(id, p)| {
                        Reply::array(alloc::vec![
                            id_reply(*id),
                            Reply::Integer(p.delivered_ms as i64),
                            Reply::Integer(p.deliveries as i64),
                        ])
                    })
                    .collect();
                Reply::fields([
                    ("name", Reply::bulk(cname.clone())),
                    ("seen-time", Reply::Integer(c.seen_ms as i64)),
                    ("pel-count", Reply::Integer(c.pending.len() as i64)),
                    ("pending", Reply::array(pending)),
                ])
            })
            .collect();
        groups.push(Reply::fields([
            ("name", Reply::bulk(name.clone())),
            ("last-delivered-id", id_reply(group.last_id)),
            ("entries-read", maybe(group.entries_read)),
            ("lag", maybe(stream.lag(group))),
            ("pel-count", Reply::Integer(group.pending.len() as i64)),
            ("pending", Reply::array(pending)),
            ("consumers", Reply::array(consumers)),
        ]));
    }
    map.extend([
        Reply::bulk("entries"),
        entries,
        Reply::bulk("groups"),
        Reply::array(groups),
    ]);
    Reply::Map(map)
}

/// `XINFO GROUPS key`: each group's consumers, pending count, last
/// delivered ID, entries read and lag.
pub(crate) fn xinfo_groups(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let key = args[2].clone();
    let stream = match info_stream(x, &key) {
        Ok(stream) => stream,
        Err(reply) => return reply,
    };
    let groups = stream
        .groups
        .iter()
        .map(|(name, group)| {
            Reply::fields([
                ("name", Reply::bulk(name.clone())),
                ("consumers", Reply::Integer(group.consumers.len() as i64)),
                ("pending", Reply::Integer(group.pending.len() as i64)),
                ("last-delivered-id", id_reply(group.last_id)),
                ("entries-read", maybe(group.entries_read)),
                ("lag", maybe(stream.lag(group))),
            ])
        })
        .collect();
    Reply::array(groups)
}

/// `XINFO CONSUMERS key group`: each consumer's pending count and idle
/// time.
pub(crate) fn xinfo_consumers(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (key, name) = (args[2].clone(), args[3].clone());
    let now = x.now;
    let stream = match info_stream(x, &key) {
        Ok(stream) => stream,
        Err(reply) => return reply,
    };
    let Some(group) = stream.groups.get(&name) else {
        return no_group_for(&key, &name);
    };
    let consumers = group
        .consumers
        .iter()
        .map(|(cname, c)| {
            Reply::fields([
                ("name", Reply::bulk(cname.clone())),
                ("pending", Reply::Integer(c.pending.len() as i64)),
                ("idle", Reply::Integer(now.saturating_sub(c.seen_ms) as i64)),
            ])
        })
        .collect();
    Reply::array(consumers)
}

/// `XINFO HELP`.
pub(crate) fn xinfo_help(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::help(&[
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
        "HELP",
        "    Prints this help.",
    ])
}
