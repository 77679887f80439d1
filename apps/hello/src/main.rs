//! `hello`: the smallest Faultline app. Prints what it runs on and exits 0.
#![no_std]
#![no_main]

use libos::{mm, println, smp};

libos::main!(main);

fn main(args: libos::Args) -> i32 {
    let stats = mm::stats();
    println!("hello from faultline");
    println!("board: {}", libos::board().name);
    println!(
        "entered at EL{}, running at EL{}",
        libos::boot::entry_el(),
        libos::arch::current_el()
    );
    println!("cores: {}", smp::cores());
    println!(
        "memory: {} MiB RAM, {} MiB free",
        (stats.total_frames * mm::FRAME_SIZE) >> 20,
        (stats.free_frames * mm::FRAME_SIZE) >> 20
    );
    println!(
        "args: {}",
        args.iter().collect::<alloc::vec::Vec<_>>().join(" ")
    );
    println!("boot time: {} ms", libos::boot::boot_time().as_millis());
    0
}

extern crate alloc;
