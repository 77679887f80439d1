//! Resolution of a page fault, from the CPU or from a device.

use super::regions::Backing;
use super::regions::RegionInfo;
use super::space::{AddressSpace, Attrs, PageState, BLOCK_SIZE};
use super::{
    copy_frame, with_frames, zero_frames, Access, FaultError, DEMAND_FAULTS, FRAME_SIZE, SPACE,
    SWAP_INS,
};
use core::sync::atomic::Ordering;

/// What `resolve` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// A zeroed frame was mapped at the page.
    MappedZeroed,
    /// A zeroed 2 MiB block was mapped around the page (huge-page region).
    MappedBlock,
    /// The shared zero block was mapped, read-only, around the page: a read
    /// of never-written memory in a huge-page region costs no zeroing.
    MappedSharedZero,
    /// The page's contents were brought back from the backing store.
    SwappedIn,
    /// Another core (or device fault) mapped the page first; retry the access.
    AlreadyMapped,
}

/// Makes the page holding `addr` accessible for `access`, if the region it
/// lies in allows it: the single place where page faults are resolved.
///
/// Takes no exception context: the CPU's abort handler and the SMMU's event
/// handler both call it. Faults on the same page from several cores are
/// serialized by the address-space lock; the later ones see `AlreadyMapped`.
pub fn resolve(addr: usize, access: Access) -> Result<Resolution, FaultError> {
    if let Some(done) = resolve_small(addr, access) {
        return done;
    }
    let mut space = SPACE.lock();
    let space = space.as_mut().ok_or(FaultError::NoRegion)?;
    let region = space.find_region(addr).ok_or(FaultError::NoRegion)?;
    match access {
        Access::Execute => return Err(FaultError::PermissionDenied(access)),
        Access::Write if !region.writable => return Err(FaultError::PermissionDenied(access)),
        _ => demand_paged(&region)?,
    }
    let need = match access {
        Access::Read => Need::Read,
        _ => Need::OwnFrame,
    };
    let resolution = make_present(space, &region, addr & !(FRAME_SIZE - 1), need)?;
    if resolution == Resolution::AlreadyMapped && need == Need::OwnFrame && !space.is_writable(addr)
    {
        // Mapped read-only, yet not the zero block: nothing to resolve.
        return Err(FaultError::PermissionDenied(access));
    }
    if resolution != Resolution::AlreadyMapped {
        DEMAND_FAULTS.fetch_add(1, Ordering::Relaxed);
    }
    Ok(resolution)
}

/// The common case, with the zeroing off the lock: a never-mapped page of
/// a 4 KiB demand-zero region. A zeroed frame is taken first (this core's
/// pool, else zeroed now, no lock held); `SPACE` is held only to look the
/// region up and write the entry (directly when its level-3 table exists,
/// else through the table library). If the page was mapped meanwhile
/// (another core, a device) or is not that case, the frame goes back to
/// the pool and `None` lets the general path decide.
fn resolve_small(addr: usize, access: Access) -> Option<Result<Resolution, FaultError>> {
    if access == Access::Execute {
        return None;
    }
    let ordinary = |r: &RegionInfo| {
        r.backing == Backing::DemandZero && !r.huge && (access == Access::Read || r.writable)
    };
    let frame = match super::zeroed::pop() {
        Some(frame) => frame,
        None => {
            // Zero a frame now only for a page this path maps.
            let region = SPACE.lock().as_ref()?.find_region(addr)?;
            if !ordinary(&region) {
                return None;
            }
            super::zeroed::take()?
        }
    };
    let page = addr & !(FRAME_SIZE - 1);
    let installed = {
        let mut space = SPACE.lock();
        match space.as_mut() {
            Some(space) => match space.find_region(addr) {
                Some(r) if ordinary(&r) => {
                    let attrs = if r.writable {
                        Attrs::ReadWrite
                    } else {
                        Attrs::ReadOnly
                    };
                    let done = space.install_page(page, frame, attrs)
                        || (space.page_state(page) == PageState::Unmapped
                            && space.map_page(page, frame, attrs).is_ok());
                    if done {
                        super::after_map(space, &r, page);
                    }
                    done
                }
                _ => false,
            },
            None => false,
        }
    };
    if installed {
        DEMAND_FAULTS.fetch_add(1, Ordering::Relaxed);
        Some(Ok(Resolution::MappedZeroed))
    } else {
        super::zeroed::give_back(frame);
        None
    }
}

/// Gives the page holding `addr` a frame of its own, as a write fault
/// would, whatever the region's permissions: pinning needs one, since a
/// pinned page of the shared zero block would move on its first write.
pub(super) fn make_own(addr: usize) -> Result<Resolution, FaultError> {
    let mut space = SPACE.lock();
    let space = space.as_mut().ok_or(FaultError::NoRegion)?;
    let region = space.find_region(addr).ok_or(FaultError::NoRegion)?;
    demand_paged(&region)?;
    make_present(space, &region, addr & !(FRAME_SIZE - 1), Need::OwnFrame)
}

/// Only demand-zero regions get pages on a fault; the others' owners map them.
fn demand_paged(region: &RegionInfo) -> Result<(), FaultError> {
    match region.backing {
        Backing::DemandZero => Ok(()),
        _ => Err(FaultError::NotDemandPaged),
    }
}

/// What the caller of [`make_present`] needs of the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Need {
    /// To read it: never-written memory of a huge-page region may stay
    /// the shared zero block.
    Read,
    /// A frame of its own: to write it, pin it, or populate it.
    OwnFrame,
}

/// Makes the page at `page` of `region` present: swaps it in if it was
/// evicted, maps a zeroed page (or block, in a huge-page region) if it was
/// never mapped, or the shared zero block when only a read is `need`ed.
/// A page of the shared zero block that needs its own frame gets one
/// (copy-on-write, with nothing to copy). Shared by fault resolution,
/// pinning and eager population.
pub(super) fn make_present(
    space: &mut AddressSpace,
    region: &RegionInfo,
    page: usize,
    need: Need,
) -> Result<Resolution, FaultError> {
    let attrs = if region.writable {
        Attrs::ReadWrite
    } else {
        Attrs::ReadOnly
    };
    let resolution = match space.page_state(page) {
        PageState::Mapped {
            shared_zero: true,
            in_block,
            ..
        } if need == Need::OwnFrame => leave_zero_block(space, page, in_block, attrs)?,
        PageState::Mapped { .. } => return Ok(Resolution::AlreadyMapped),
        PageState::Evicted { slot } => {
            let frame = with_frames(|f| f.alloc()).map_err(|_| FaultError::OutOfFrames)?;
            if slot == 0 {
                zero_frames(frame, 1);
            } else {
                copy_frame(slot, frame);
                with_frames(|f| f.free(slot));
            }
            space
                .map_page(page, frame, attrs)
                .expect("mapping an evicted page cannot fail");
            SWAP_INS.fetch_add(1, Ordering::Relaxed);
            Resolution::SwappedIn
        }
        PageState::Unmapped => {
            let block = page & !(BLOCK_SIZE - 1);
            let fits = region.huge
                && block >= region.start
                && block + BLOCK_SIZE <= region.start + region.len;
            match if fits {
                space.block_is_empty(block)
            } else {
                false
            } {
                true if need == Need::Read && space.map_zero_block(block) => {
                    Resolution::MappedSharedZero
                }
                true => {
                    match with_frames(|f| f.alloc_contiguous(BLOCK_SIZE / FRAME_SIZE, BLOCK_SIZE)) {
                        Ok(frames) => {
                            zero_frames(frames, BLOCK_SIZE / FRAME_SIZE);
                            space
                                .map_block(block, frames, attrs)
                                .expect("mapping an empty block cannot fail");
                            Resolution::MappedBlock
                        }
                        Err(_) => map_zeroed_page(space, page, attrs)?,
                    }
                }
                false => map_zeroed_page(space, page, attrs)?,
            }
        }
    };
    super::after_map(space, region, page);
    Ok(resolution)
}

fn map_zeroed_page(
    space: &mut AddressSpace,
    page: usize,
    attrs: Attrs,
) -> Result<Resolution, FaultError> {
    let frame = with_frames(|f| f.alloc()).map_err(|_| FaultError::OutOfFrames)?;
    zero_frames(frame, 1);
    space
        .map_page(page, frame, attrs)
        .expect("mapping an unmapped page cannot fail");
    Ok(Resolution::MappedZeroed)
}

/// Gives `page`, now mapped to the shared zero block, zeroed memory of its
/// own: a whole block when the mapping is one (and 2 MiB are free), else
/// the one page.
fn leave_zero_block(
    space: &mut AddressSpace,
    page: usize,
    in_block: bool,
    attrs: Attrs,
) -> Result<Resolution, FaultError> {
    if in_block {
        let block = page & !(BLOCK_SIZE - 1);
        if let Ok(frames) = with_frames(|f| f.alloc_contiguous(BLOCK_SIZE / FRAME_SIZE, BLOCK_SIZE))
        {
            zero_frames(frames, BLOCK_SIZE / FRAME_SIZE);
            space.replace(block..block + BLOCK_SIZE, frames, attrs);
            return Ok(Resolution::MappedBlock);
        }
        space.split_block(page);
    }
    let frame = with_frames(|f| f.alloc()).map_err(|_| FaultError::OutOfFrames)?;
    zero_frames(frame, 1);
    space.replace(page..page + FRAME_SIZE, frame, attrs);
    Ok(Resolution::MappedZeroed)
}
