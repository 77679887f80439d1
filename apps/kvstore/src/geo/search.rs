//! Searching a sorted set of points: the cells to look at around a
//! shape's centre, and the points within the shape, in the order Redis
//! finds them (cell by cell, centre first, each cell by score).

use alloc::vec::Vec;

use super::hash::{self, Hash, WGS84};
use super::{deg_rad, distance, lat_distance, rad_deg, EARTH_RADIUS};
use crate::store::Zset;

/// The largest distance from the centre of Web Mercator, in metres.
const MERCATOR_MAX: f64 = 20_037_726.37;

/// What a search covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Extent {
    /// Within `radius` units of the centre.
    Radius(f64),
    /// Within a box `width` by `height` units around the centre.
    Box {
        /// East to west.
        width: f64,
        /// North to south.
        height: f64,
    },
}

/// A search's shape: a centre (longitude, latitude), an extent, and the
/// metres in one of the extent's units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    /// Longitude and latitude of the centre.
    pub centre: (f64, f64),
    /// The radius or box.
    pub extent: Extent,
    /// Metres per unit (`m` 1, `km` 1000, `ft` 0.3048, `mi` 1609.34).
    pub unit: f64,
}

/// One point found.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// Its member.
    pub member: Vec<u8>,
    /// Its score (the geohash).
    pub score: f64,
    /// Longitude and latitude (its cell's centre).
    pub position: (f64, f64),
    /// Metres from the shape's centre.
    pub distance: f64,
}

/// The step whose cells are about the size of `metres` at `lat`.
fn steps_for(mut metres: f64, lat: f64) -> u8 {
    if metres == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while metres < MERCATOR_MAX {
        metres *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// The shape's bounding box: (west, south, east, north) in degrees.
fn bounding_box(shape: &Shape) -> (f64, f64, f64, f64) {
    let (lon, lat) = shape.centre;
    let (half_height, half_width) = match shape.extent {
        Extent::Radius(r) => (r, r),
        Extent::Box { width, height } => (height / 2.0, width / 2.0),
    };
    let (height, width) = (shape.unit * half_height, shape.unit * half_width);
    let lat_delta = rad_deg(height / EARTH_RADIUS);
    let lon_delta_top = rad_deg(width / EARTH_RADIUS / libm::cos(deg_rad(lat + lat_delta)));
    let lon_delta_bottom = rad_deg(width / EARTH_RADIUS / libm::cos(deg_rad(lat - lat_delta)));
    let lon_delta = if lat < 0.0 {
        lon_delta_bottom
    } else {
        lon_delta_top
    };
    (
        lon - lon_delta,
        lat - lat_delta,
        lon + lon_delta,
        lat + lat_delta,
    )
}

/// The cells to look at, centre first then its neighbours in Redis's
/// order, those the shape cannot reach zeroed.
fn cells(shape: &Shape) -> [Hash; 9] {
    let (min_lon, min_lat, max_lon, max_lat) = bounding_box(shape);
    let (lon, lat) = shape.centre;
    let radius = match shape.extent {
        Extent::Radius(r) => r,
        Extent::Box { width, height } => {
            libm::sqrt((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0))
        }
    } * shape.unit;
    let mut steps = steps_for(radius, lat);
    let at = |steps| hash::encode(WGS84, lon, lat, steps).unwrap_or_default();
    let mut centre = at(steps);
    let mut around = hash::neighbours(centre);
    let decoded = |h: Hash| hash::decode(WGS84, h).unwrap_or_default();
    let [north, south, east, west, ..] = around.map(decoded);
    let too_small = north.latitude.max < max_lat
        || south.latitude.min > min_lat
        || east.longitude.max < max_lon
        || west.longitude.min > min_lon;
    if steps > 1 && too_small {
        steps -= 1;
        centre = at(steps);
        around = hash::neighbours(centre);
    }
    let area = decoded(centre);
    if steps >= 2 {
        // North 0, south 1, east 2, west 3, NE 4, NW 5, SE 6, SW 7.
        let mut zero = |which: [usize; 3]| which.iter().for_each(|&i| around[i] = Hash::default());
        if area.latitude.min < min_lat {
            zero([1, 7, 6]);
        }
        if area.latitude.max > max_lat {
            zero([0, 4, 5]);
        }
        if area.longitude.min < min_lon {
            zero([3, 7, 5]);
        }
        if area.longitude.max > max_lon {
            zero([2, 6, 4]);
        }
    }
    let mut all = [centre; 9];
    all[1..].copy_from_slice(&around);
    all
}

/// Where a point at `score` is and how far from the centre, if it lies
/// within the shape.
fn within(shape: &Shape, score: f64) -> Option<((f64, f64), f64)> {
    let (x2, y2) = hash::decode_score(score);
    let (x1, y1) = shape.centre;
    match shape.extent {
        Extent::Radius(r) => {
            let d = distance(x1, y1, x2, y2);
            (d <= r * shape.unit).then_some(((x2, y2), d))
        }
        Extent::Box { width, height } => {
            if lat_distance(y2, y1) > height * shape.unit / 2.0 {
                return None;
            }
            if distance(x2, y2, x1, y2) > width * shape.unit / 2.0 {
                return None;
            }
            Some(((x2, y2), distance(x1, y1, x2, y2)))
        }
    }
}

/// The points of `zset` within `shape`, in the order Redis finds them;
/// with a `limit` (`ANY`), the search stops once it has that many.
pub fn points_within(zset: &Zset, shape: &Shape, limit: Option<usize>) -> Vec<Found> {
    let mut found = Vec::new();
    let full = |found: &Vec<Found>| limit.is_some_and(|n| !found.is_empty() && found.len() >= n);
    let cells = cells(shape);
    let mut last = 0;
    for (i, &cell) in cells.iter().enumerate() {
        if cell.is_zero() || (last != 0 && cell == cells[last]) {
            continue;
        }
        if full(&found) {
            break;
        }
        let min = cell.align52() as f64;
        let max = Hash {
            bits: cell.bits + 1,
            step: cell.step,
        }
        .align52() as f64;
        let first = zset.count_while(&|score, _| score < min);
        for rank in first..zset.len() {
            let Some((member, score)) = zset.get(rank) else {
                break;
            };
            if score >= max {
                break;
            }
            if let Some((position, distance)) = within(shape, score) {
                found.push(Found {
                    member: member.to_vec(),
                    score,
                    position,
                    distance,
                });
            }
            if full(&found) {
                break;
            }
        }
        last = i;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaller_radii_take_finer_cells() {
        assert_eq!(steps_for(0.0, 0.0), 26);
        assert!(steps_for(100.0, 0.0) > steps_for(100_000.0, 0.0));
        assert_eq!(
            steps_for(100.0, 70.0),
            steps_for(100.0, 0.0) - 1,
            "wider near the poles"
        );
        assert_eq!(steps_for(1e9, 0.0), 1);
    }

    #[test]
    fn a_small_circle_looks_at_few_cells() {
        let shape = Shape {
            centre: (15.0, 37.0),
            extent: Extent::Radius(1.0),
            unit: 1.0,
        };
        let cells = cells(&shape);
        assert!(!cells[0].is_zero());
        assert!(
            cells.iter().any(|c| c.is_zero()),
            "unreachable ones: {cells:?}"
        );
    }
}
