//! The geospatial commands that add and read points: `GEOADD`,
//! `GEODIST`, `GEOHASH` and `GEOPOS` (the searches are in
//! `commands::geo_search`). Points are members of a sorted set scored by
//! their 52-bit geohash (see `kvstore::geo`), so every sorted-set command
//! works on them too; `GEOADD` is a `ZADD` of those scores, and is logged
//! and announced as one.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::zsets::{self, parse_score};
use crate::geo::{self, hash};
use crate::num::format_i64;
use crate::resp::Reply;

/// A double argument as Redis reads one, or `-ERR <message>`.
pub(super) fn double(arg: &[u8], message: &str) -> Result<f64, Reply> {
    parse_score(arg).ok_or_else(|| Reply::Error(alloc::format!("ERR {message}")))
}

/// A longitude and latitude, within Web Mercator's limits.
pub(super) fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), Reply> {
    let lon = double(lon, "value is not a valid float")?;
    let lat = double(lat, "value is not a valid float")?;
    if !(geo::LONG_MIN..=geo::LONG_MAX).contains(&lon)
        || !(geo::LAT_MIN..=geo::LAT_MAX).contains(&lat)
    {
        return Err(Reply::Error(alloc::format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok((lon, lat))
}

/// Metres per unit: `m`, `km`, `ft` or `mi`, any case.
pub(super) fn unit(arg: &[u8]) -> Result<f64, Reply> {
    match arg.to_ascii_lowercase().as_slice() {
        b"m" => Ok(1.0),
        b"km" => Ok(1000.0),
        b"ft" => Ok(0.3048),
        b"mi" => Ok(1609.34),
        _ => Err(Reply::error(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        )),
    }
}

/// The score a point gets.
fn score_of(lon: f64, lat: f64) -> u64 {
    hash::encode(hash::WGS84, lon, lat, geo::STEP_MAX).map_or(0, hash::Hash::align52)
}

/// `GEOADD key [NX|XX] [CH] longitude latitude member [...]`: what `ZADD`
/// with the points' scores answers.
pub(crate) fn geoadd(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (mut nx, mut xx, mut at) = (false, false, 2);
    while let Some(arg) = args.get(at) {
        match arg.to_ascii_lowercase().as_slice() {
            b"nx" => nx = true,
            b"xx" => xx = true,
            b"ch" => {}
            _ => break,
        }
        at += 1;
    }
    if !(args.len() - at).is_multiple_of(3) || (nx && xx) {
        return errors::syntax();
    }
    let mut zadd: Vec<Vec<u8>> = Vec::with_capacity(at + (args.len() - at) / 3 * 2);
    zadd.push(b"ZADD".to_vec());
    zadd.extend(args[1..at].iter().cloned());
    for point in args[at..].chunks(3) {
        let (lon, lat) = match lon_lat(&point[0], &point[1]) {
            Ok(position) => position,
            Err(reply) => return reply,
        };
        zadd.push(format_i64(score_of(lon, lat) as i64));
        zadd.push(point[2].clone());
    }
    zsets::zadd(x, &mut zadd)
}

/// `GEODIST key member1 member2 [M|KM|FT|MI]`: their distance with four
/// decimals, or nil if the key or a member is missing.
pub(crate) fn geodist(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let per_unit = match args.len() {
        4 => 1.0,
        5 => match unit(&args[4]) {
            Ok(per_unit) => per_unit,
            Err(reply) => return reply,
        },
        _ => return errors::syntax(),
    };
    let zset = match x.read_zset(&args[1]) {
        Ok(Some(zset)) => zset,
        Ok(None) => return Reply::nil(),
        Err(reply) => return reply,
    };
    let (Some(a), Some(b)) = (zset.score(&args[2]), zset.score(&args[3])) else {
        return Reply::nil();
    };
    let ((lon1, lat1), (lon2, lat2)) = (hash::decode_score(a), hash::decode_score(b));
    let metres = geo::distance(lon1, lat1, lon2, lat2);
    Reply::bulk(geo::format_distance(metres / per_unit).into_bytes())
}

/// The scores of `members` in the sorted set at `key` (`None` for those
/// missing, all of them if the key is), for `GEOHASH` and `GEOPOS`.
fn scores(x: &mut Exec<'_>, key: &[u8], members: &[Vec<u8>]) -> Result<Vec<Option<f64>>, Reply> {
    let zset = x.read_zset(key)?;
    Ok(members
        .iter()
        .map(|m| zset.and_then(|z| z.score(m)))
        .collect())
}

/// `GEOHASH key [member ...]`: each member's 11-character geohash (the
/// standard one, over latitudes -90 to 90), nil for missing ones.
pub(crate) fn geohash(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let scores = match scores(x, &args[1], &args[2..]) {
        Ok(scores) => scores,
        Err(reply) => return reply,
    };
    let standard = (
        hash::Range {
            min: -180.0,
            max: 180.0,
        },
        hash::Range {
            min: -90.0,
            max: 90.0,
        },
    );
    let text = |score: f64| {
        let (lon, lat) = hash::decode_score(score);
        let bits = hash::encode(standard, lon, lat, geo::STEP_MAX).map_or(0, |h| h.bits);
        (0..11)
            .map(|i| match i {
                10 => ALPHABET[0],
                _ => ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize],
            })
            .collect::<Vec<u8>>()
    };
    Reply::array(
        scores
            .into_iter()
            .map(|score| score.map_or_else(Reply::nil, |s| Reply::bulk(text(s))))
            .collect(),
    )
}

/// `GEOPOS key [member ...]`: each member's longitude and latitude, a
/// null array for missing ones.
pub(crate) fn geopos(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let scores = match scores(x, &args[1], &args[2..]) {
        Ok(scores) => scores,
        Err(reply) => return reply,
    };
    Reply::array(
        scores
            .into_iter()
            .map(|score| match score {
                None => Reply::Array(None),
                Some(score) => coordinates(hash::decode_score(score)),
            })
            .collect(),
    )
}

/// `[longitude, latitude]` as Redis prints them (doubles in RESP3).
pub(super) fn coordinates((lon, lat): (f64, f64)) -> Reply {
    Reply::array(alloc::vec![
        Reply::Double(geo::format_coordinate(lon).into_bytes()),
        Reply::Double(geo::format_coordinate(lat).into_bytes()),
    ])
}
