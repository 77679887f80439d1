//! `SORT` and `SORT_RO`: the elements of a list, set or sorted set put in
//! numeric or byte order, by their own value or by values other keys hold
//! (`BY`), a window of them (`LIMIT`), each replaced by values other keys
//! hold (`GET`), returned or, for `SORT`, stored as a list (`STORE`).
//!
//! # Patterns
//!
//! `BY` and `GET` name other keys with a pattern whose first `*` stands for
//! the element: for element `3`, `weight_*` reads the string `weight_3` and
//! `obj_*->w` the field `w` of the hash `obj_3` (a `->` with nothing after
//! it is part of the key's name). A key that is missing or of another type
//! gives nothing: `GET` answers nil (an empty string in a stored list) and
//! `BY` sorts the element as 0 (numeric) or before every value (`ALPHA`).
//! `GET #` is the element itself. The keys are read as any command reads
//! them: expired ones go first.
//!
//! # Order
//!
//! Numeric by default: each element (or its `BY` value) must read as a
//! double, as C's `strtod` reads the whole of it (spaces before it allowed,
//! no hexadecimal form, an empty string is 0), else the command fails with
//! Redis's "One or more scores can't be converted into double". Equal
//! numbers are ordered by the elements' bytes, so the order is always the
//! same. `ALPHA` orders by bytes (Redis's `strcoll` in the C locale); equal
//! `BY` values too fall back to the elements' bytes. `DESC` reverses it all.
//!
//! A `BY` pattern without `*` (`BY nosort`) keeps the input's own order: a
//! list's from its head (from its tail with `DESC`), a sorted set's by score
//! (highest first with `DESC`), with `LIMIT` counted in that order. A set
//! has no order of its own, so a set stored with `BY nosort` (or sorted so
//! for a script) is sorted with `ALPHA` instead, as Redis does, to give the
//! same list every time.
//!
//! # What gets logged
//!
//! `SORT ... STORE dst` is logged as its result: `DEL dst` and the records
//! that recreate the stored list (`RPUSH dst ...`), or only `DEL dst` when
//! the result is empty and `dst` existed. Replay then stores the same list
//! whatever the keys the patterns read held.

use alloc::vec::Vec;
use core::cmp::Ordering;
use core::ops::{Deref, Range};

use super::errors;
use super::exec::{reply_fits, Exec};
use super::strings::copy_for_reply;
use crate::aof::push_entry;
use crate::config::Config;
use crate::notify;
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::store::{Data, End, Entry, List, Store};

/// `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
/// [ALPHA] [STORE destination]`: the sorted elements (or what the `GET`
/// patterns name for each), or with `STORE` how many were stored.
pub(crate) fn sort(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    run(x, args, false)
}

/// `SORT_RO key ...`: `SORT` without `STORE`, for where only reads are
/// allowed (`STORE` is a syntax error here).
pub(crate) fn sort_ro(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    run(x, args, true)
}

/// The reply when memory for the elements, the reply or the stored list
/// cannot be had.
fn oom() -> Reply {
    Reply::error("OOM not enough memory to sort")
}

/// The reply when an element or its `BY` value is not a number.
fn not_double() -> Reply {
    Reply::error("ERR One or more scores can't be converted into double")
}

/// What a `GET` or `BY` pattern names for an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pattern<'a> {
    /// `#`: the element itself.
    Element,
    /// No `*`: no key at all (`GET` of it is always nil).
    Constant,
    /// The key `prefix` element `suffix`: its string value, or with a
    /// `field` that field of the hash it holds.
    Key {
        prefix: &'a [u8],
        suffix: &'a [u8],
        field: Option<&'a [u8]>,
    },
}

impl<'a> Pattern<'a> {
    /// Splits `pattern` at its first `*`, and the rest at its first `->`
    /// if something follows that.
    fn parse(pattern: &'a [u8]) -> Self {
        if pattern == b"#" {
            return Pattern::Element;
        }
        let Some(star) = pattern.iter().position(|&b| b == b'*') else {
            return Pattern::Constant;
        };
        let (prefix, rest) = (&pattern[..star], &pattern[star + 1..]);
        let arrow = rest.windows(2).position(|w| w == b"->");
        match arrow {
            Some(at) if at + 2 < rest.len() => Pattern::Key {
                prefix,
                suffix: &rest[..at],
                field: Some(&rest[at + 2..]),
            },
            _ => Pattern::Key {
                prefix,
                suffix: rest,
                field: None,
            },
        }
    }

    /// Reads the key this pattern names for `element` as commands read
    /// keys (an expired key goes first; a hit or miss is counted), leaving
    /// its name in `key`; then the value it names, if any, is
    /// [`value_at`](Pattern::value_at) `key`. `false` for a pattern that
    /// names no key.
    fn read(&self, x: &mut Exec<'_>, element: &[u8], key: &mut Vec<u8>) -> Result<bool, Reply> {
        let Pattern::Key { prefix, suffix, .. } = *self else {
            return Ok(false);
        };
        key.clear();
        key.try_reserve(prefix.len() + element.len() + suffix.len())
            .map_err(|_| oom())?;
        key.extend_from_slice(prefix);
        key.extend_from_slice(element);
        key.extend_from_slice(suffix);
        x.read(key);
        Ok(true)
    }

    /// The value this pattern names in `entry` (the key it named): a
    /// string's bytes, or the hash field's; `None` for another type.
    fn value_at<'s>(&self, entry: Option<&'s Entry>) -> Option<&'s [u8]> {
        let entry = entry?;
        match *self {
            Pattern::Key {
                field: Some(field), ..
            } => entry.hash()?.get(field),
            Pattern::Key { field: None, .. } => entry.shared().map(|v| v.as_slice()),
            Pattern::Element | Pattern::Constant => None,
        }
    }
}

/// The options of one `SORT`, borrowed from its arguments.
#[derive(Debug, PartialEq)]
struct Options<'a> {
    /// The last `BY` pattern with a `*`: sort by what it names.
    by: Option<Pattern<'a>>,
    /// A `BY` pattern without `*` was given: keep the input order.
    nosort: bool,
    /// `LIMIT offset count`.
    limit: Option<(i64, i64)>,
    /// The `GET` patterns, in order; none: the elements themselves.
    gets: Vec<Pattern<'a>>,
    desc: bool,
    alpha: bool,
    /// `STORE destination` (the last one given).
    store: Option<&'a [u8]>,
}

impl<'a> Options<'a> {
    /// Reads the options after the key; `readonly` (`SORT_RO`) refuses
    /// `STORE`. An unknown word, or one missing its arguments, is a syntax
    /// error.
    fn parse(args: &'a [Vec<u8>], readonly: bool) -> Result<Self, Reply> {
        let mut options = Options {
            by: None,
            nosort: false,
            limit: None,
            gets: Vec::new(),
            desc: false,
            alpha: false,
            store: None,
        };
        let mut i = 0;
        while i < args.len() {
            let word = &args[i];
            let left = args.len() - i - 1;
            let is = |name: &str| word.eq_ignore_ascii_case(name.as_bytes());
            if is("ASC") {
                options.desc = false;
            } else if is("DESC") {
                options.desc = true;
            } else if is("ALPHA") {
                options.alpha = true;
            } else if is("LIMIT") && left >= 2 {
                let offset = parse_i64(&args[i + 1]).ok_or_else(errors::not_integer)?;
                let count = parse_i64(&args[i + 2]).ok_or_else(errors::not_integer)?;
                options.limit = Some((offset, count));
                i += 2;
            } else if is("STORE") && left >= 1 && !readonly {
                options.store = Some(&args[i + 1]);
                i += 1;
            } else if is("BY") && left >= 1 {
                let pattern = &args[i + 1];
                if pattern.contains(&b'*') {
                    options.by = Some(Pattern::parse(pattern));
                } else {
                    options.nosort = true;
                }
                i += 1;
            } else if is("GET") && left >= 1 {
                options.gets.try_reserve(1).map_err(|_| oom())?;
                options.gets.push(Pattern::parse(&args[i + 1]));
                i += 1;
            } else {
                return Err(errors::syntax());
            }
            i += 1;
        }
        Ok(options)
    }
}

/// The positions `LIMIT offset count` selects among `len` elements: from
/// `offset` (0 if negative) on, `count` of them (all if negative).
fn window(limit: Option<(i64, i64)>, len: usize) -> Range<usize> {
    let (offset, count) = limit.unwrap_or((0, -1));
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let start = offset.max(0);
    if start >= len {
        return 0..0;
    }
    let end = if count < 0 {
        len
    } else {
        start.saturating_add(count).min(len)
    };
    start as usize..end as usize
}

/// One element being sorted, with what it is sorted by.
#[derive(Debug)]
struct Item {
    element: Vec<u8>,
    /// Numeric order: the element's number, or its `BY` value's (0 if the
    /// key is missing).
    score: f64,
    /// `ALPHA` with `BY`: the `BY` value (`None`: the key is missing).
    by: Option<Vec<u8>>,
}

/// How items compare: the parts of the options that decide it.
#[derive(Clone, Copy)]
struct Order {
    alpha: bool,
    by: bool,
    desc: bool,
}

impl Order {
    fn compare(self, a: &Item, b: &Item) -> Ordering {
        let order = if !self.alpha {
            // Scores are never NaN (refused when read).
            a.score
                .partial_cmp(&b.score)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a.element.cmp(&b.element))
        } else if self.by {
            // A missing value (`None`) comes first.
            a.by.cmp(&b.by).then_with(|| a.element.cmp(&b.element))
        } else {
            a.element.cmp(&b.element)
        };
        if self.desc {
            order.reverse()
        } else {
            order
        }
    }
}

/// A number as C's `strtod` reads the whole of `text`, as Redis's `SORT`
/// does: white space before it is skipped, an empty string is 0, and NaN
/// or a value out of a double's range (too large or too small) is `None`.
fn to_double(text: &[u8]) -> Option<f64> {
    if text.is_empty() {
        return Some(0.0);
    }
    let from = text
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))?;
    let text = core::str::from_utf8(&text[from..]).ok()?;
    let n: f64 = text.parse().ok()?;
    if n.is_nan() {
        return None;
    }
    let named = text.bytes().any(|b| b.eq_ignore_ascii_case(&b'i'));
    if n.is_infinite() && !named {
        return None;
    }
    let mantissa = text.split(['e', 'E']).next().unwrap_or("");
    let nonzero = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    if nonzero && n.abs() < f64::MIN_POSITIVE {
        return None;
    }
    Some(n)
}

/// Copies of `len` elements, ready to sort.
fn items<E: Deref<Target = [u8]>>(
    elements: impl Iterator<Item = E>,
    len: usize,
) -> Result<Vec<Item>, Reply> {
    let mut items = Vec::new();
    items.try_reserve_exact(len).map_err(|_| oom())?;
    for element in elements {
        items.push(Item {
            element: copy_for_reply(&element)?,
            score: 0.0,
            by: None,
        });
    }
    Ok(items)
}

/// The input order of a list or sorted set, kept by `BY nosort`: the
/// `window` of its `len` elements from the start, or from the end if
/// `desc`, as the element positions to read, in order.
fn kept(window: &Range<usize>, len: usize, desc: bool) -> (usize, usize, bool) {
    if desc {
        (len - window.end, len - 1 - window.start, true)
    } else {
        (window.start, window.end - 1, false)
    }
}

/// Copies the elements of `data` (a missing key: none) to sort, and the
/// positions among them the reply takes. With `keep_order` (`BY nosort`)
/// a list or sorted set gives only the window, in its own order.
fn load(
    data: Option<&Data>,
    limit: Option<(i64, i64)>,
    keep_order: bool,
    desc: bool,
) -> Result<(Vec<Item>, Range<usize>), Reply> {
    let len = match data {
        Some(Data::List(list)) => list.len(),
        Some(Data::Set(set)) => set.len(),
        Some(Data::Zset(zset)) => zset.len(),
        _ => 0,
    };
    let window = window(limit, len);
    let taken = window.len();
    match data {
        Some(Data::List(list)) if keep_order => {
            if taken == 0 {
                return Ok((Vec::new(), 0..0));
            }
            let (from, to, reverse) = kept(&window, len, desc);
            let range = list.range(from, to);
            let items = match reverse {
                true => items(range.rev(), taken)?,
                false => items(range, taken)?,
            };
            Ok((items, 0..taken))
        }
        Some(Data::Zset(zset)) if keep_order => {
            if taken == 0 {
                return Ok((Vec::new(), 0..0));
            }
            let (from, to, reverse) = kept(&window, len, desc);
            let range = zset.range(from, to).map(|(member, _)| member);
            let items = match reverse {
                true => items(range.rev(), taken)?,
                false => items(range, taken)?,
            };
            Ok((items, 0..taken))
        }
        Some(Data::List(list)) => Ok((items(list.iter(), len)?, window)),
        Some(Data::Set(set)) => Ok((items(set.iter(), len)?, window)),
        Some(Data::Zset(zset)) => Ok((items(zset.iter().map(|(m, _)| m), len)?, window)),
        _ => Ok((Vec::new(), 0..0)),
    }
}

/// Reads what each item is sorted by: its `BY` value (copied for
/// `ALPHA`, else read as a number) or its own number. Every key is read
/// even after a value that is not a number, as Redis does; then the
/// command fails.
fn read_keys(
    x: &mut Exec<'_>,
    items: &mut [Item],
    by: Option<Pattern<'_>>,
    alpha: bool,
) -> Result<(), Reply> {
    let mut bad = false;
    let mut key = Vec::new();
    for item in items.iter_mut() {
        match by {
            Some(pattern) => {
                pattern.read(x, &item.element, &mut key)?;
                let Some(value) = pattern.value_at(x.store.get(&key)) else {
                    continue;
                };
                if alpha {
                    item.by = Some(copy_for_reply(value)?);
                } else {
                    match to_double(value) {
                        Some(score) => item.score = score,
                        None => bad = true,
                    }
                }
            }
            None if alpha => {}
            None => match to_double(&item.element) {
                Some(score) => item.score = score,
                None => bad = true,
            },
        }
    }
    match bad {
        true => Err(not_double()),
        false => Ok(()),
    }
}

/// Bytes a reply entry takes beyond its value: RESP's framing (a nil
/// takes `$-1\r\n`), so that a reply of many nils is measured too.
const ENTRY_FRAMING: u64 = 5;

/// Runs `SORT` (`readonly`: `SORT_RO`).
fn run(x: &mut Exec<'_>, args: &[Vec<u8>], readonly: bool) -> Reply {
    let mut options = match Options::parse(&args[2..], readonly) {
        Ok(options) => options,
        Err(reply) => return reply,
    };
    let settled = options.store.is_some() || x.client.in_script;
    let data = match x.read(&args[1]) {
        None => None,
        Some(entry) => match entry.data() {
            data @ (Data::List(_) | Data::Set(_) | Data::Zset(_)) => Some(data),
            _ => return errors::wrong_type(),
        },
    };
    if options.nosort && settled && matches!(data, Some(Data::Set(_))) {
        // A set's own order is not the same on every server: stored, or
        // given to a script (whose effects must not depend on it), it is
        // sorted by bytes.
        options.nosort = false;
        options.alpha = true;
        options.by = None;
    }
    let loaded = load(data, options.limit, options.nosort, options.desc);
    let (mut items, window) = match loaded {
        Ok(loaded) => loaded,
        Err(reply) => return reply,
    };
    if !options.nosort {
        if let Err(reply) = read_keys(x, &mut items, options.by, options.alpha) {
            return reply;
        }
        let order = Order {
            alpha: options.alpha,
            by: options.by.is_some(),
            desc: options.desc,
        };
        let compare = |a: &Item, b: &Item| order.compare(a, b);
        // Only the window needs to be in order: what follows it is just
        // set apart first.
        if window.end > 0 && window.end < items.len() {
            items.select_nth_unstable_by(window.end - 1, compare);
            items[..window.end].sort_unstable_by(compare);
        } else {
            items.sort_unstable_by(compare);
        }
    }
    let chosen = &mut items[window];
    match options.store {
        Some(dst) => store(x, dst, chosen, &options.gets),
        None => reply(x, chosen, &options.gets),
    }
}

/// The reply: for each item its element, or what each `GET` names.
fn reply(x: &mut Exec<'_>, items: &[Item], gets: &[Pattern<'_>]) -> Reply {
    let Some(len) = items.len().checked_mul(gets.len().max(1)) else {
        return oom();
    };
    let mut out = Vec::new();
    if out.try_reserve_exact(len).is_err() {
        return oom();
    }
    let mut bytes = 0u64;
    let mut key = Vec::new();
    // Each value is measured against the reply's limit before it is
    // copied.
    let mut add = |config: &Config, value: Option<&[u8]>, out: &mut Vec<Reply>| {
        bytes += ENTRY_FRAMING + value.map_or(0, |v| v.len() as u64);
        reply_fits(config, bytes)?;
        let copy = value.map(copy_for_reply).transpose()?;
        out.push(Reply::Bulk(copy));
        Ok::<(), Reply>(())
    };
    for item in items {
        let outcome = if gets.is_empty() {
            add(x.config, Some(&item.element), &mut out)
        } else {
            gets.iter().try_for_each(|get| match get {
                Pattern::Element => add(x.config, Some(&item.element), &mut out),
                pattern => {
                    let value = match pattern.read(x, &item.element, &mut key)? {
                        true => pattern.value_at(x.store.get(&key)),
                        false => None,
                    };
                    add(x.config, value, &mut out)
                }
            })
        };
        if let Err(reply) = outcome {
            return reply;
        }
    }
    Reply::array(out)
}

/// `STORE dst`: the reply's values as a list at `dst` (a missing value as
/// an empty string), replacing whatever it held and its expiry; an empty
/// result removes `dst`. How many elements were stored.
fn store(x: &mut Exec<'_>, dst: &[u8], items: &mut [Item], gets: &[Pattern<'_>]) -> Reply {
    let Some(len) = items.len().checked_mul(gets.len().max(1)) else {
        return oom();
    };
    let mut list = List::new();
    if list.try_reserve(len).is_err() {
        return oom();
    }
    let mut key = Vec::new();
    for item in items.iter_mut() {
        if gets.is_empty() {
            list.push(End::Right, core::mem::take(&mut item.element));
            continue;
        }
        for get in gets {
            let value = match get {
                Pattern::Element => Some(&item.element[..]),
                pattern => match pattern.read(x, &item.element, &mut key) {
                    Ok(true) => pattern.value_at(x.store.get(&key)),
                    Ok(false) => None,
                    Err(reply) => return reply,
                },
            };
            match copy_for_reply(value.unwrap_or(&[])) {
                Ok(copy) => list.push(End::Right, copy),
                Err(_) => return oom(),
            }
        }
    }
    let stored = list.len();
    let existed = x.exists(dst);
    if stored == 0 {
        if existed {
            x.store.remove(dst);
            x.log([&b"DEL"[..], dst]);
            x.notify(notify::GENERIC, "del", dst);
        }
        return Reply::Integer(0);
    }
    x.store.set(dst, list, None);
    x.log([&b"DEL"[..], dst]);
    if let (Some(entry), false) = (x.store.get(dst), x.loading) {
        push_entry(&mut x.effects, dst, entry);
    }
    if !existed {
        // The destination is not among the table's key arguments, whose
        // creation the engine announces itself.
        x.notify(notify::NEW, "new", dst);
    }
    x.notify(notify::LIST, "sortstore", dst);
    x.key_ready(dst);
    Reply::Integer(stored as i64)
}

/// Growth of `SORT ... STORE dst`: the list it would store, bounded by
/// every element's values (the elements, or what the `GET` patterns name
/// for them) and by the window's size times the largest of them; nothing
/// without `STORE` or for options the command refuses.
pub(crate) fn sort_growth(store: &Store, _config: &Config, args: &[Vec<u8>]) -> usize {
    let Ok(options) = Options::parse(&args[2..], false) else {
        return 0;
    };
    let Some(dst) = options.store else {
        return 0;
    };
    let data = store.get(&args[1]).map(Entry::data);
    let mut key = Vec::new();
    let (mut total, mut largest, mut len) = (0usize, 0usize, 0usize);
    let mut short = false;
    let mut cost_of = |element: &[u8]| {
        let mut cost = 0usize;
        let mut add = |bytes: usize| cost = cost.saturating_add(List::element_cost(bytes));
        if options.gets.is_empty() {
            add(element.len());
        }
        for get in &options.gets {
            let value = match get {
                Pattern::Element => Some(element),
                Pattern::Constant => None,
                Pattern::Key { prefix, suffix, .. } => {
                    key.clear();
                    let len = prefix.len() + element.len() + suffix.len();
                    if key.try_reserve(len).is_err() {
                        // No memory to name the key: as if it held the
                        // most, so that the command is refused.
                        short = true;
                        continue;
                    }
                    key.extend_from_slice(prefix);
                    key.extend_from_slice(element);
                    key.extend_from_slice(suffix);
                    get.value_at(store.get(&key))
                }
            };
            add(value.map_or(0, <[u8]>::len));
        }
        total = total.saturating_add(cost);
        largest = largest.max(cost);
        len += 1;
    };
    match data {
        Some(Data::List(list)) => list.iter().for_each(&mut cost_of),
        Some(Data::Set(set)) => set.iter().for_each(|m| cost_of(&m)),
        Some(Data::Zset(zset)) => zset.iter().for_each(|(m, _)| cost_of(m)),
        _ => {}
    }
    if short {
        // More than any limit, yet safe to add to the memory in use.
        return usize::MAX / 2;
    }
    let taken = window(options.limit, len).len();
    let bound = total.min(largest.saturating_mul(taken));
    if bound == 0 {
        return 0;
    }
    store.growth_if_set(dst, bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_split_at_the_first_star_and_arrow() {
        assert_eq!(Pattern::parse(b"#"), Pattern::Element);
        assert_eq!(Pattern::parse(b"nosort"), Pattern::Constant);
        assert_eq!(
            Pattern::parse(b"w_*"),
            Pattern::Key {
                prefix: b"w_",
                suffix: b"",
                field: None
            }
        );
        assert_eq!(
            Pattern::parse(b"o_*_x->f->g"),
            Pattern::Key {
                prefix: b"o_",
                suffix: b"_x",
                field: Some(b"f->g")
            }
        );
        // Nothing after the arrow: it is part of the key's name.
        assert_eq!(
            Pattern::parse(b"x:*->"),
            Pattern::Key {
                prefix: b"x:",
                suffix: b"->",
                field: None
            }
        );
        // Only the first star stands for the element.
        assert_eq!(
            Pattern::parse(b"a*b*"),
            Pattern::Key {
                prefix: b"a",
                suffix: b"b*",
                field: None
            }
        );
    }

    #[test]
    fn windows_follow_limit() {
        assert_eq!(window(None, 5), 0..5);
        assert_eq!(window(Some((1, 2)), 5), 1..3);
        assert_eq!(window(Some((-10, 100)), 5), 0..5);
        assert_eq!(window(Some((5, 10)), 5), 0..0);
        assert_eq!(window(Some((2, -1)), 5), 2..5);
        assert_eq!(window(Some((2, 0)), 5), 2..2);
        assert_eq!(window(Some((2, i64::MAX)), 3), 2..3);
        assert_eq!(window(None, 0), 0..0);
    }

    #[test]
    fn numbers_read_as_strtod_reads_them() {
        assert_eq!(to_double(b"1.5"), Some(1.5));
        assert_eq!(to_double(b"  -2e3"), Some(-2000.0));
        assert_eq!(to_double(b""), Some(0.0));
        assert_eq!(to_double(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(to_double(b"   "), None);
        assert_eq!(to_double(b"1 "), None);
        assert_eq!(to_double(b"nan"), None);
        assert_eq!(to_double(b"abc"), None);
        assert_eq!(to_double(b"1e400"), None, "too large");
        assert_eq!(to_double(b"1e-400"), None, "too small");
        assert_eq!(to_double(b"0e-400"), Some(0.0));
    }

    #[test]
    fn options_parse_like_redis() {
        let args = |s: &str| {
            s.split(' ')
                .map(|a| a.as_bytes().to_vec())
                .collect::<Vec<_>>()
        };
        let a = args("by w_* limit 1 2 get # get o_*->f desc alpha store d");
        let options = Options::parse(&a, false).unwrap();
        assert_eq!(options.limit, Some((1, 2)));
        assert_eq!(options.gets.len(), 2);
        assert!(options.desc && options.alpha && !options.nosort);
        assert_eq!(options.store, Some(&b"d"[..]));
        let a = args("store d");
        assert_eq!(Options::parse(&a, true), Err(errors::syntax()));
        let a = args("limit 1");
        assert_eq!(Options::parse(&a, false), Err(errors::syntax()));
        let a = args("limit x 1");
        assert_eq!(Options::parse(&a, false), Err(errors::not_integer()));
        // A `BY` without `*` is sticky, as in Redis.
        let a = args("by nosort by w_*");
        assert!(Options::parse(&a, false).unwrap().nosort);
    }
}
