//! The geospatial searches: `GEOSEARCH`, `GEOSEARCHSTORE`, `GEORADIUS`,
//! `GEORADIUSBYMEMBER` and their `_RO` forms, over the points of a sorted
//! set (see `kvstore::geo::search`), with Redis's option parsing, errors,
//! result order and formats. A stored result is a sorted set scored by
//! geohash (or by distance with `STOREDIST`), logged as its whole value.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::geo::{coordinates, double, lon_lat, unit};
use super::zset_ranges::store_result;
use crate::geo::search::{points_within, Extent, Found, Shape};
use crate::geo::{self, hash};
use crate::notify;
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::store::Zset;

/// Which command is searching.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `GEORADIUS key lon lat radius unit ...` (`store`: STORE allowed).
    Radius { store: bool },
    /// `GEORADIUSBYMEMBER key member radius unit ...`.
    RadiusByMember { store: bool },
    /// `GEOSEARCH key ...`.
    Search,
    /// `GEOSEARCHSTORE dest key ...`.
    SearchStore,
}

/// `GEORADIUS key longitude latitude radius M|KM|FT|MI [WITHCOORD]
/// [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC|DESC] [STORE key |
/// STOREDIST key]`.
pub(crate) fn georadius(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    search(x, args, Kind::Radius { store: true })
}

/// `GEORADIUS_RO`: `GEORADIUS` without `STORE`.
pub(crate) fn georadius_ro(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    search(x, args, Kind::Radius { store: false })
}

/// `GEORADIUSBYMEMBER key member radius unit ...`: around a member.
pub(crate) fn georadiusbymember(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    search(x, args, Kind::RadiusByMember { store: true })
}

/// `GEORADIUSBYMEMBER_RO`: without `STORE`.
pub(crate) fn georadiusbymember_ro(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    search(x, args, Kind::RadiusByMember { store: false })
}

/// `GEOSEARCH key FROMMEMBER member | FROMLONLAT lon lat BYRADIUS radius
/// unit | BYBOX width height unit [ASC|DESC] [COUNT count [ANY]]
/// [WITHCOORD] [WITHDIST] [WITHHASH]`.
pub(crate) fn geosearch(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    search(x, args, Kind::Search)
}

/// `GEOSEARCHSTORE destination source ... [STOREDIST]`.
pub(crate) fn geosearchstore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    search(x, args, Kind::SearchStore)
}

/// Everything the arguments asked for.
#[derive(Default)]
struct Request {
    centre: Option<(f64, f64)>,
    extent: Option<Extent>,
    unit: f64,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    any: bool,
    count: i64,
    /// 1 ascending, -1 descending, 0 as found.
    sort: i8,
    store: Option<usize>,
    store_dist: bool,
    from_member: bool,
    from_lonlat: bool,
}

/// The position of `member` in the sorted set at `key` (live, checked).
fn member_position(x: &Exec<'_>, key: &[u8], member: &[u8]) -> Result<(f64, f64), Reply> {
    x.store
        .get(key)
        .and_then(|e| e.zset())
        .and_then(|z| z.score(member))
        .map(hash::decode_score)
        .ok_or_else(|| Reply::error("ERR could not decode requested zset member"))
}

/// A radius and its unit.
fn radius(arg: &[u8], unit_arg: &[u8]) -> Result<(Extent, f64), Reply> {
    let r = double(arg, "need numeric radius")?;
    if r < 0.0 {
        return Err(Reply::error("ERR radius cannot be negative"));
    }
    Ok((Extent::Radius(r), unit(unit_arg)?))
}

/// A box's width, height and unit.
fn box_extent(args: &[Vec<u8>]) -> Result<(Extent, f64), Reply> {
    let width = double(&args[0], "need numeric width")?;
    let height = double(&args[1], "need numeric height")?;
    if height < 0.0 || width < 0.0 {
        return Err(Reply::error("ERR height or width cannot be negative"));
    }
    Ok((Extent::Box { width, height }, unit(&args[2])?))
}

/// Reads the arguments in Redis's order, failing at the first bad one.
fn parse(
    x: &Exec<'_>,
    args: &[Vec<u8>],
    kind: Kind,
    source: usize,
    exists: bool,
) -> Result<Request, Reply> {
    let mut r = Request::default();
    let base = match kind {
        Kind::Radius { .. } => {
            r.centre = Some(lon_lat(&args[2], &args[3])?);
            (r.extent, r.unit) = radius(&args[4], &args[5]).map(|(e, u)| (Some(e), u))?;
            6
        }
        Kind::RadiusByMember { .. } if !exists => 5,
        Kind::RadiusByMember { .. } => {
            r.centre = Some(member_position(x, &args[source], &args[2])?);
            (r.extent, r.unit) = radius(&args[3], &args[4]).map(|(e, u)| (Some(e), u))?;
            5
        }
        Kind::Search => 2,
        Kind::SearchStore => {
            r.store = Some(1);
            3
        }
    };
    let searching = matches!(kind, Kind::Search | Kind::SearchStore);
    let may_store = matches!(
        kind,
        Kind::Radius { store: true } | Kind::RadiusByMember { store: true }
    );
    let mut i = base;
    while i < args.len() {
        let left = args.len() - i - 1;
        match args[i].to_ascii_lowercase().as_slice() {
            b"withdist" => r.with_dist = true,
            b"withhash" => r.with_hash = true,
            b"withcoord" => r.with_coord = true,
            b"any" => r.any = true,
            b"asc" => r.sort = 1,
            b"desc" => r.sort = -1,
            b"count" if left >= 1 => {
                r.count = parse_i64(&args[i + 1]).ok_or_else(errors::not_integer)?;
                if r.count <= 0 {
                    return Err(Reply::error("ERR COUNT must be > 0"));
                }
                i += 1;
            }
            word @ (b"store" | b"storedist") if left >= 1 && may_store => {
                r.store = Some(i + 1);
                r.store_dist = word == b"storedist";
                i += 1;
            }
            b"storedist" if kind == Kind::SearchStore => r.store_dist = true,
            b"frommember" if left >= 1 && searching && !r.from_lonlat => {
                if exists {
                    r.centre = Some(member_position(x, &args[source], &args[i + 1])?);
                }
                r.from_member = true;
                i += 1;
            }
            b"fromlonlat" if left >= 2 && searching && !r.from_member => {
                r.centre = Some(lon_lat(&args[i + 1], &args[i + 2])?);
                r.from_lonlat = true;
                i += 2;
            }
            b"byradius"
                if left >= 2 && searching && !matches!(r.extent, Some(Extent::Box { .. })) =>
            {
                (r.extent, r.unit) =
                    radius(&args[i + 1], &args[i + 2]).map(|(e, u)| (Some(e), u))?;
                i += 2;
            }
            b"bybox" if left >= 3 && searching && !matches!(r.extent, Some(Extent::Radius(_))) => {
                (r.extent, r.unit) = box_extent(&args[i + 1..i + 4]).map(|(e, u)| (Some(e), u))?;
                i += 3;
            }
            _ => return Err(errors::syntax()),
        }
        i += 1;
    }
    if r.store.is_some() && (r.with_dist || r.with_hash || r.with_coord) {
        return Err(Reply::Error(alloc::format!(
            "ERR {} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if kind == Kind::SearchStore {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        )));
    }
    let name = || errors::lossy(&args[0]);
    if searching && !(r.from_member || r.from_lonlat) {
        return Err(Reply::Error(alloc::format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            name()
        )));
    }
    if searching && r.extent.is_none() {
        return Err(Reply::Error(alloc::format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
            name()
        )));
    }
    if r.any && r.count == 0 {
        return Err(Reply::error("ERR the ANY argument requires COUNT argument"));
    }
    Ok(r)
}

fn search(x: &mut Exec<'_>, args: &mut [Vec<u8>], kind: Kind) -> Reply {
    let source = if kind == Kind::SearchStore { 2 } else { 1 };
    let exists = match x.read_zset(&args[source]) {
        Ok(zset) => zset.is_some(),
        Err(reply) => return reply,
    };
    let mut r = match parse(x, args, kind, source, exists) {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    let zset = x.store.get(&args[source]).and_then(|e| e.zset());
    let (Some(zset), Some(centre), Some(extent)) = (zset, r.centre, r.extent) else {
        return match r.store {
            Some(dest) => store(x, &args[dest], &[], false, kind),
            None => Reply::array(Vec::new()),
        };
    };
    if r.count != 0 && r.sort == 0 && !r.any {
        r.sort = 1;
    }
    let shape = Shape {
        centre,
        extent,
        unit: r.unit,
    };
    let limit = (r.any).then_some(r.count as usize);
    let mut found = points_within(zset, &shape, limit);
    // Stable, as glibc's qsort (a merge sort) is.
    match r.sort {
        1 => found.sort_by(|a, b| a.distance.total_cmp(&b.distance)),
        -1 => found.sort_by(|a, b| b.distance.total_cmp(&a.distance)),
        _ => {}
    }
    if r.count > 0 {
        found.truncate(r.count as usize);
    }
    for point in &mut found {
        point.distance /= shape.unit;
    }
    match r.store {
        Some(dest) => store(x, &args[dest], &found, r.store_dist, kind),
        None => Reply::array(found.into_iter().map(|p| answer(p, &r)).collect()),
    }
}

/// One point of the reply: its member alone, or with what was asked.
fn answer(point: Found, r: &Request) -> Reply {
    if !(r.with_dist || r.with_hash || r.with_coord) {
        return Reply::bulk(point.member);
    }
    let mut items = alloc::vec![Reply::bulk(point.member)];
    if r.with_dist {
        items.push(Reply::bulk(
            geo::format_distance(point.distance).into_bytes(),
        ));
    }
    if r.with_hash {
        items.push(Reply::Integer(c_i64(point.score)));
    }
    if r.with_coord {
        items.push(coordinates(point.position));
    }
    Reply::array(items)
}

/// `(long long)x` as x86-64 computes it: the integer part, or i64::MIN
/// out of range (a score no `GEOADD` wrote may be anything).
fn c_i64(x: f64) -> i64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    match (-TWO_63..TWO_63).contains(&x) {
        true => x as i64,
        false => i64::MIN,
    }
}

/// Stores the points as a sorted set at `dest`, scored by geohash or by
/// distance; none deletes it. The count.
fn store(x: &mut Exec<'_>, dest: &[u8], found: &[Found], by_distance: bool, kind: Kind) -> Reply {
    let limits = x.config.zset_compact;
    let longest = found.iter().map(|p| p.member.len()).max().unwrap_or(0);
    let mut zset = Zset::for_size(found.len(), longest, limits);
    for point in found {
        let score = if by_distance {
            point.distance
        } else {
            point.score
        };
        if zset.insert(point.member.clone(), score, limits).is_err() {
            return errors::oom();
        }
    }
    let existed = x.exists(dest);
    let event = match kind {
        Kind::Search | Kind::SearchStore => "geosearchstore",
        _ => "georadiusstore",
    };
    if !existed && !found.is_empty() && kind != Kind::SearchStore {
        // Not a key argument of the table, whose creation the engine
        // announces itself; first, as Redis announces a new key.
        x.notify(notify::NEW, "new", dest);
    }
    store_result(x, dest, zset, event)
}

/// Growth of a search that may store: at most the searched set again.
pub(crate) fn store_growth(
    store: &crate::store::Store,
    _config: &crate::config::Config,
    args: &[Vec<u8>],
) -> usize {
    let source = match args[0].eq_ignore_ascii_case(b"geosearchstore") {
        true => 2,
        false => 1,
    };
    args.get(source)
        .and_then(|key| store.get(key))
        .map_or(0, |e| e.data().size())
}
