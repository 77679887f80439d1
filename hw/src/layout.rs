// Shared by the linker-script generator (build.rs) and the kernel, so that the
// stack area the linker reserves is exactly the one the kernel maps.

/// Most cores any supported board has; per-core stacks are reserved for this many.
pub const MAX_CORES: usize = 4;
/// Size of a page and of a stack guard.
pub const PAGE_SIZE: usize = 4096;
/// Size of each core's thread stack (runs on SP_EL0).
pub const MAIN_STACK_SIZE: usize = 256 * 1024;
/// Size of each core's exception stack (runs on SP_EL1).
pub const EXCEPTION_STACK_SIZE: usize = 32 * 1024;
/// Bytes one core's stacks take: guard, thread stack, guard, exception stack.
pub const CORE_STACKS_SIZE: usize = PAGE_SIZE + MAIN_STACK_SIZE + PAGE_SIZE + EXCEPTION_STACK_SIZE;
/// Bytes the linker reserves for the stacks of all cores.
pub const STACKS_SIZE: usize = MAX_CORES * CORE_STACKS_SIZE;
/// Size of the `.bootargs` section the image tool fills with the app's arguments.
pub const BOOTARGS_SIZE: usize = 4096;
