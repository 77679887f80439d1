//! The stencil's arithmetic, shared by the guest app and the host reference
//! test: Jacobi heat diffusion on a 2D (5-point) or 3D (7-point) grid of
//! f64 with fixed boundary values. Every cell's update uses the same
//! operation order wherever and on however many cores it runs, and the
//! checksum is folded in one fixed order, so results are bit-for-bit equal.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

use core::ops::Range;

/// Grid dimensions; `nz == 1` is the 2D case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    /// Cells along x (fastest-varying).
    pub nx: usize,
    /// Cells along y.
    pub ny: usize,
    /// Cells along z (1 for 2D).
    pub nz: usize,
}

impl Dims {
    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.nx * self.ny * self.nz
    }

    /// Whether this is the 3D (7-point) variant.
    pub fn is_3d(&self) -> bool {
        self.nz > 1
    }

    /// Interior cells updated per iteration.
    pub fn interior(&self) -> usize {
        let z = if self.is_3d() { self.nz - 2 } else { 1 };
        (self.nx - 2) * (self.ny - 2) * z
    }

    /// Floating-point operations per interior cell (adds and one multiply).
    pub fn flops_per_cell(&self) -> usize {
        if self.is_3d() {
            6
        } else {
            4
        }
    }

    /// The planes (3D) or rows (2D) that hold interior cells: the units of
    /// work split between cores.
    pub fn work_units(&self) -> Range<usize> {
        if self.is_3d() {
            1..self.nz - 1
        } else {
            1..self.ny - 1
        }
    }
}

/// Why the arguments do not describe a grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimsError {
    /// A dimension below 3 (no interior) or too large.
    BadSize,
}

/// Checks sizes: every dimension at least 3, at most 2^20 cells per side.
pub fn dims(nx: usize, ny: usize, nz: Option<usize>) -> Result<Dims, DimsError> {
    let nz = nz.unwrap_or(1);
    let ok = |n: usize| (3..=1 << 20).contains(&n);
    if !ok(nx)
        || !ok(ny)
        || (nz != 1 && !ok(nz))
        || nx.checked_mul(ny).and_then(|c| c.checked_mul(nz)).is_none()
    {
        return Err(DimsError::BadSize);
    }
    Ok(Dims { nx, ny, nz })
}

/// The fixed boundary value of cell (x, y, z) if it is on the boundary:
/// a hot face (y = 0) at 1.0, the other faces at 0.0.
pub fn boundary(d: &Dims, x: usize, y: usize, z: usize) -> Option<f64> {
    let on_edge = x == 0
        || x == d.nx - 1
        || y == 0
        || y == d.ny - 1
        || (d.is_3d() && (z == 0 || z == d.nz - 1));
    on_edge.then_some(if y == 0 { 1.0 } else { 0.0 })
}

/// Writes the boundary values into `grid` (interior cells are left alone:
/// they start as the zeros of fresh memory).
pub fn set_boundary(d: &Dims, grid: &mut [f64]) {
    for z in 0..d.nz {
        for y in 0..d.ny {
            for x in 0..d.nx {
                if let Some(v) = boundary(d, x, y, z) {
                    grid[(z * d.ny + y) * d.nx + x] = v;
                }
            }
        }
    }
}

/// Updates the work units `units` (rows in 2D, planes in 3D) of `new` from
/// `old`. Interior cells only; boundaries are never written.
pub fn sweep(d: &Dims, old: &[f64], new: &mut [f64], units: Range<usize>) {
    let unit = unit_cells(d);
    sweep_into(
        d,
        old,
        &mut new[units.start * unit..units.end * unit],
        units,
    );
}

/// [`sweep`] into `out`, the cells of `units` alone (so that cores can
/// each hold their part of the new grid).
pub fn sweep_into(d: &Dims, old: &[f64], out: &mut [f64], units: Range<usize>) {
    let (nx, ny) = (d.nx, d.ny);
    let base = units.start * unit_cells(d);
    if d.is_3d() {
        let plane = nx * ny;
        for z in units {
            for y in 1..ny - 1 {
                for x in 1..nx - 1 {
                    let i = z * plane + y * nx + x;
                    let s = ((old[i - 1] + old[i + 1]) + (old[i - nx] + old[i + nx]))
                        + (old[i - plane] + old[i + plane]);
                    out[i - base] = s * (1.0 / 6.0);
                }
            }
        }
    } else {
        for y in units {
            for x in 1..nx - 1 {
                let i = y * nx + x;
                out[i - base] = ((old[i - nx] + old[i + nx]) + (old[i - 1] + old[i + 1])) * 0.25;
            }
        }
    }
}

/// The part of `units` that worker `index` of `workers` takes: contiguous
/// slabs, sizes differing by at most one.
pub fn slab(units: Range<usize>, index: usize, workers: usize) -> Range<usize> {
    let n = units.len();
    let start = units.start + n * index / workers;
    let end = units.start + n * (index + 1) / workers;
    start..end
}

/// A checksum of the whole grid: the sum of all cells in memory order, and
/// an FNV-1a hash of their bit patterns (equal only if every bit is).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Checksum {
    /// Sum of the cells, for people.
    pub sum: f64,
    /// Hash of every cell's bits, for exact comparison.
    pub hash: u64,
}

impl Checksum {
    /// The checksum of no cells: the start of a fold.
    pub fn empty() -> Self {
        Checksum {
            sum: 0.0,
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }

    /// Folds `cells` in, after everything folded so far. Folding a grid in
    /// pieces, in memory order, gives the same bits as folding it whole, so
    /// nodes that each hold a slab can pass the fold along.
    pub fn fold(mut self, cells: &[f64]) -> Self {
        for v in cells {
            self.sum += v;
            for b in v.to_bits().to_le_bytes() {
                self.hash = (self.hash ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        self
    }
}

/// Checksums `grid`.
pub fn checksum(grid: &[f64]) -> Checksum {
    Checksum::empty().fold(grid)
}

/// Updates one work unit (a row in 2D, a plane in 3D) into `out` from the
/// unit itself and its two neighbours, each its own slice: how a node
/// sweeps the units next to its ghost units, which live in memory of their
/// own. Same operation order as [`sweep`], so the bits are the same.
pub fn sweep_unit(d: &Dims, prev: &[f64], cur: &[f64], next: &[f64], out: &mut [f64]) {
    let (nx, ny) = (d.nx, d.ny);
    if d.is_3d() {
        for y in 1..ny - 1 {
            for x in 1..nx - 1 {
                let i = y * nx + x;
                let s =
                    ((cur[i - 1] + cur[i + 1]) + (cur[i - nx] + cur[i + nx])) + (prev[i] + next[i]);
                out[i] = s * (1.0 / 6.0);
            }
        }
    } else {
        for x in 1..nx - 1 {
            out[x] = ((prev[x] + next[x]) + (cur[x - 1] + cur[x + 1])) * 0.25;
        }
    }
}

/// Cells in one work unit: a row (2D) or a plane (3D).
pub fn unit_cells(d: &Dims) -> usize {
    if d.is_3d() {
        d.nx * d.ny
    } else {
        d.nx
    }
}

/// Writes the boundary values of work unit `unit` (global index) into
/// `cells`, which holds just that unit.
pub fn set_unit_boundary(d: &Dims, unit: usize, cells: &mut [f64]) {
    if d.is_3d() {
        for y in 0..d.ny {
            for x in 0..d.nx {
                if let Some(v) = boundary(d, x, y, unit) {
                    cells[y * d.nx + x] = v;
                }
            }
        }
    } else {
        for (x, cell) in cells[..d.nx].iter_mut().enumerate() {
            if let Some(v) = boundary(d, x, unit, 0) {
                *cell = v;
            }
        }
    }
}

/// Runs `iterations` sweeps on one core and returns the final grid's
/// checksum: the host reference the guest must match.
pub fn reference(d: &Dims, iterations: usize) -> Checksum {
    extern crate alloc;
    let mut a = alloc::vec![0.0; d.cells()];
    set_boundary(d, &mut a);
    let mut b = a.clone();
    for _ in 0..iterations {
        sweep(d, &a, &mut b, d.work_units());
        core::mem::swap(&mut a, &mut b);
    }
    checksum(&a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabs_cover_the_units_once_even_when_uneven() {
        for workers in 1..=7 {
            let mut next = 1;
            for i in 0..workers {
                let s = slab(1..18, i, workers);
                assert_eq!(s.start, next);
                next = s.end;
            }
            assert_eq!(next, 18);
        }
    }

    #[test]
    fn splitting_the_work_does_not_change_a_single_bit() {
        for d in [dims(37, 23, None).unwrap(), dims(11, 9, Some(7)).unwrap()] {
            let whole = reference(&d, 20);
            let mut a = vec![0.0; d.cells()];
            set_boundary(&d, &mut a);
            let mut b = a.clone();
            for _ in 0..20 {
                for w in 0..3 {
                    sweep(&d, &a, &mut b, slab(d.work_units(), w, 3));
                }
                std::mem::swap(&mut a, &mut b);
            }
            assert_eq!(checksum(&a), whole);
        }
    }

    /// Sweeps the grid the way a node does: unit by unit, each unit and its
    /// neighbours as separate slices, the grid split into node slabs whose
    /// checksums are folded one after another.
    fn by_units(d: &Dims, iterations: usize, nodes: usize) -> Checksum {
        let u = unit_cells(d);
        let units = if d.is_3d() { d.nz } else { d.ny };
        let mut a: Vec<Vec<f64>> = (0..units)
            .map(|k| {
                let mut cells = vec![0.0; u];
                set_unit_boundary(d, k, &mut cells);
                cells
            })
            .collect();
        let mut b = a.clone();
        for _ in 0..iterations {
            for k in d.work_units() {
                sweep_unit(d, &a[k - 1], &a[k], &a[k + 1], &mut b[k]);
            }
            std::mem::swap(&mut a, &mut b);
        }
        let mut c = Checksum::empty();
        for node in 0..nodes {
            let mine = slab(d.work_units(), node, nodes);
            let first = if node == 0 { 0 } else { mine.start };
            let last = if node == nodes - 1 { units } else { mine.end };
            for cells in &a[first..last] {
                c = c.fold(cells);
            }
        }
        c
    }

    #[test]
    fn unit_sweeps_and_folded_checksums_match_the_whole_grid() {
        for d in [dims(37, 23, None).unwrap(), dims(11, 9, Some(7)).unwrap()] {
            for nodes in 1..=4 {
                assert_eq!(by_units(&d, 15, nodes), reference(&d, 15), "{d:?} {nodes}");
            }
        }
    }

    #[test]
    fn heat_flows_in_from_the_hot_face() {
        let d = dims(16, 16, None).unwrap();
        let c0 = reference(&d, 0);
        let c50 = reference(&d, 50);
        assert_eq!(
            c0.sum, 16.0,
            "only the hot face (y = 0, corners included) is 1.0"
        );
        assert!(c50.sum > c0.sum);
        assert_ne!(c50.hash, reference(&d, 51).hash);
    }

    #[test]
    fn bad_sizes_are_refused() {
        assert_eq!(dims(2, 10, None), Err(DimsError::BadSize));
        assert_eq!(dims(10, 10, Some(2)), Err(DimsError::BadSize));
        assert!(dims(3, 3, Some(3)).is_ok());
        assert_eq!(dims(usize::MAX, 10, None), Err(DimsError::BadSize));
    }
}
