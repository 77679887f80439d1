//! Ending the system: semihosting SYS_EXIT carries the status to QEMU's exit
//! code (with `-semihosting`); otherwise PSCI SYSTEM_OFF powers off.

use hw::board::PsciConduit;

/// Stops every core and ends the machine with `code` as its status.
pub fn exit(code: i32) -> ! {
    crate::console::flush();
    crate::arch::probe::semihosting_exit(code);
    if code != 0 {
        crate::console::print_emergency(format_args!(
            "exit status {code} is lost without semihosting; powering off\n"
        ));
    }
    crate::console::flush();
    let _ = match crate::boot::psci_conduit() {
        PsciConduit::Hvc => smccc::psci::system_off::<smccc::Hvc>(),
        PsciConduit::Smc => smccc::psci::system_off::<smccc::Smc>(),
    };
    loop {
        crate::arch::wait_for_interrupt();
    }
}
