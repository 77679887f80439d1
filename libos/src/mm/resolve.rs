//! Resolution of a page fault, from the CPU or from a device.

use super::regions::Backing;
use super::space::Attrs;
use super::{with_frames, zero_frame, Access, FaultError, DEMAND_FAULTS, FRAME_SIZE, SPACE};
use core::sync::atomic::Ordering;

/// What `resolve` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// A zeroed frame was mapped at the page.
    MappedZeroed,
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
    let mut space = SPACE.lock();
    let space = space.as_mut().ok_or(FaultError::NoRegion)?;
    let region = space.regions.find(addr).ok_or(FaultError::NoRegion)?;
    match access {
        Access::Execute => return Err(FaultError::PermissionDenied(access)),
        Access::Write if !region.writable => return Err(FaultError::PermissionDenied(access)),
        _ => {}
    }
    if region.backing != Backing::DemandZero {
        return Err(FaultError::NotDemandPaged);
    }
    let page = addr & !(FRAME_SIZE - 1);
    if space.translate(page).is_some() {
        return Ok(Resolution::AlreadyMapped);
    }
    let frame = with_frames(|f| f.alloc()).map_err(|_| FaultError::OutOfFrames)?;
    zero_frame(frame);
    let attrs = if region.writable { Attrs::ReadWrite } else { Attrs::ReadOnly };
    space.map_page(page, frame, attrs).expect("mapping an unmapped page cannot fail");
    DEMAND_FAULTS.fetch_add(1, Ordering::Relaxed);
    Ok(Resolution::MappedZeroed)
}
