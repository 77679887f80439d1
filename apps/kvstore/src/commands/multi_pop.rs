//! The arguments `LMPOP`, `BLMPOP`, `ZMPOP` and `BZMPOP` share:
//! `numkeys key [key ...] WHERE [COUNT count]`, where `WHERE` is the
//! command's own word (`LEFT|RIGHT`, `MIN|MAX`); and the run of each,
//! which differs only in the type popped.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::list_moves::{parse_timeout, wait_or_nil};
use crate::num::parse_i64;
use crate::resp::Reply;

/// What a multi-key pop asks: which keys, from which side (`W`), how many.
pub(super) struct MultiPop<W> {
    /// Where the keys are in the arguments.
    pub keys: core::ops::Range<usize>,
    /// The side to pop from, as the command's `side` parser read it.
    pub side: W,
    /// Most elements to pop (`COUNT`, 1 without it).
    pub count: usize,
}

impl<W> MultiPop<W> {
    /// Reads `numkeys key [key ...] WHERE [COUNT count]` from `args[at..]`,
    /// `WHERE` by `side` (`None`: a syntax error), with Redis's errors.
    pub fn parse(
        args: &[Vec<u8>],
        at: usize,
        side: impl Fn(&[u8]) -> Option<W>,
    ) -> Result<Self, Reply> {
        let numkeys = match parse_i64(&args[at]) {
            Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => return Err(Reply::error("ERR numkeys should be greater than 0")),
        };
        let first = at + 1;
        let where_at = first.saturating_add(numkeys);
        let Some(side) = args.get(where_at).and_then(|arg| side(arg)) else {
            return Err(errors::syntax());
        };
        let mut count = None;
        let mut rest = args[where_at + 1..].iter();
        while let Some(option) = rest.next() {
            match rest.as_slice().first() {
                Some(value) if count.is_none() && option.eq_ignore_ascii_case(b"COUNT") => {
                    rest.next();
                    count = match parse_i64(value) {
                        Some(n) if n > 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
                        _ => return Err(Reply::error("ERR count should be greater than 0")),
                    };
                }
                _ => return Err(errors::syntax()),
            }
        }
        Ok(MultiPop {
            keys: first..where_at,
            side,
            count: count.unwrap_or(1),
        })
    }
}

/// What a multi-key pop does with its type: `holds` tells whether a key
/// holds a live value of it (`WRONGTYPE` for a value of another type), and
/// `pop` pops up to the request's count from such a key, as replied.
pub(super) struct Kind<W> {
    /// The type's name, as a blocked client waits for it.
    pub name: &'static str,
    /// Whether the key holds a live value of the type.
    pub holds: fn(&mut Exec<'_>, &[u8]) -> Result<bool, Reply>,
    /// Pops from a key that holds the type.
    pub pop: PopFrom<W>,
}

/// Pops up to a request's count from one key, the popped items as replied.
pub(super) type PopFrom<W> = fn(&mut Exec<'_>, &[u8], &MultiPop<W>) -> Result<Vec<Reply>, Reply>;

/// Pops from the first of `request`'s keys holding `kind`'s type:
/// `[key, [popped ...]]`, `None` if no key does, `WRONGTYPE` at the first
/// key of another type before it.
fn pop_first<W>(
    x: &mut Exec<'_>,
    args: &[Vec<u8>],
    request: &MultiPop<W>,
    kind: &Kind<W>,
) -> Result<Option<Reply>, Reply> {
    for key in &args[request.keys.clone()] {
        if (kind.holds)(x, key)? {
            let popped = (kind.pop)(x, key, request)?;
            return Ok(Some(Reply::array(alloc::vec![
                Reply::bulk(key.clone()),
                Reply::array(popped),
            ])));
        }
    }
    Ok(None)
}

/// Runs `LMPOP`/`ZMPOP` (`blocking` false: `numkeys` is `args[1]`) or
/// `BLMPOP`/`BZMPOP` (`timeout` first): the request read with `side`,
/// popped from the first key holding `kind`, and with nothing to pop a
/// null array, which a blocking form first waits for a value of the kind
/// on every key to change.
pub(super) fn serve<W>(
    x: &mut Exec<'_>,
    args: &[Vec<u8>],
    blocking: bool,
    side: impl Fn(&[u8]) -> Option<W>,
    kind: &Kind<W>,
) -> Reply {
    let (at, deadline) = if blocking {
        match parse_timeout(&args[1], x.now) {
            Ok(deadline) => (2, deadline),
            Err(reply) => return reply,
        }
    } else {
        (1, None)
    };
    let request = match MultiPop::parse(args, at, side) {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    match pop_first(x, args, &request, kind) {
        Ok(Some(reply)) => reply,
        Ok(None) if blocking => wait_or_nil(
            x,
            &args[request.keys.clone()],
            deadline,
            kind.name,
            Reply::Array(None),
        ),
        Ok(None) => Reply::Array(None),
        Err(reply) => reply,
    }
}
