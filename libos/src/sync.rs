//! Spin locks that are safe to take in interrupt handlers: taking the lock
//! masks IRQs on this core, so a handler can never spin on a lock its own
//! core already holds.

use crate::arch;
use core::ops::{Deref, DerefMut};

/// A spin lock that masks IRQs on the local core while held.
pub struct IrqSpinLock<T> {
    inner: spin::Mutex<T>,
}

/// Access to the data of a held [`IrqSpinLock`]; unlocks and restores the
/// core's IRQ mask when dropped.
pub struct IrqSpinLockGuard<'a, T> {
    guard: Option<spin::MutexGuard<'a, T>>,
    irqs_were_enabled: bool,
}

impl<T> IrqSpinLock<T> {
    /// A new unlocked lock holding `value`.
    pub const fn new(value: T) -> Self {
        Self {
            inner: spin::Mutex::new(value),
        }
    }

    /// Masks IRQs, then spins until the lock is free.
    pub fn lock(&self) -> IrqSpinLockGuard<'_, T> {
        let irqs_were_enabled = arch::irq_save_disable();
        IrqSpinLockGuard {
            guard: Some(self.inner.lock()),
            irqs_were_enabled,
        }
    }

    /// Takes the lock if it is free.
    pub fn try_lock(&self) -> Option<IrqSpinLockGuard<'_, T>> {
        let irqs_were_enabled = arch::irq_save_disable();
        match self.inner.try_lock() {
            Some(guard) => Some(IrqSpinLockGuard {
                guard: Some(guard),
                irqs_were_enabled,
            }),
            None => {
                arch::irq_restore(irqs_were_enabled);
                None
            }
        }
    }
}

impl<T> Deref for IrqSpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("guard is present until drop")
    }
}

impl<T> DerefMut for IrqSpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().expect("guard is present until drop")
    }
}

impl<T> Drop for IrqSpinLockGuard<'_, T> {
    fn drop(&mut self) {
        // Unlock first, then let interrupts in.
        self.guard = None;
        arch::irq_restore(self.irqs_were_enabled);
    }
}

#[cfg(test)]
mod tests {
    use super::IrqSpinLock;

    #[test]
    fn lock_gives_exclusive_access_and_try_lock_sees_it() {
        let lock = IrqSpinLock::new(5);
        {
            let mut guard = lock.lock();
            *guard += 1;
            assert!(lock.try_lock().is_none());
        }
        assert_eq!(*lock.try_lock().unwrap(), 6);
    }
}
