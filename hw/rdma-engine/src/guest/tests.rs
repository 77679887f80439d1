//! GuestDma against a fake QEMU.
