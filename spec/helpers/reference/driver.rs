//! driver.rs: drives the reference probe with a script read from standard
//! input (spec/reference_spec.lua writes it; spec/helpers/script_probe.c
//! drives ours with the same script). probe.rs beside this file is a copy
//! of ../shared/reference/dispatch_phase_probe.rs without its first line,
//! which names the crate; the reference is compiled as it is. One call per
//! line, numbers in decimal:
//!
//!     add PHASE NS             add_host_ns
//!     nested REGION NS         measure_nested around a spin of NS
//!     counts NODES PTX_BYTES BUFFERS BINDINGS FIXPOINT GX GY GZ
//!                              record_counts
//!     kernel NS                record_kernel_ns
//!     emit SEQ WALL ENQUEUE WAIT WINDOW|- HITS MISSES
//!                              emit (- : no device window)
//!
//! The reference writes its lines to standard error, as it does in vyre;
//! it reads VYRE_CUDA_DISPATCH_PHASE_PROBE, which the spec sets.

#[allow(dead_code)]
#[path = "probe.rs"]
mod probe;

use probe::{Nested, Phase};
use std::io::BufRead;
use std::time::Instant;
use vyre_foundation::ir::Program;

fn phase(name: &str) -> Phase {
    match name {
        "prepare" => Phase::Prepare,
        "ptx" => Phase::Ptx,
        "modkey" => Phase::ModuleKey,
        "stage" => Phase::Stage,
        "resolve" => Phase::Resolve,
        "lease" => Phase::Lease,
        "launch" => Phase::LaunchLoop,
        "release" => Phase::Release,
        "readback" => Phase::Readback,
        _ => panic!("unknown phase {name}"),
    }
}

fn nested(name: &str) -> Nested {
    match name {
        "ptx_digest" => Nested::PtxDigest,
        "ptx_vsa" => Nested::PtxVsa,
        _ => panic!("unknown nested region {name}"),
    }
}

fn num(w: &[&str], i: usize) -> u64 {
    w[i].parse().unwrap_or_else(|_| panic!("not a u64: {}", w[i]))
}

fn main() {
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line.expect("script line");
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.first().copied() {
            None => {}
            Some("add") => probe::add_host_ns(phase(w[1]), num(&w, 2)),
            Some("nested") => {
                let ns = num(&w, 2);
                probe::measure_nested(nested(w[1]), || {
                    let t0 = Instant::now();
                    while (t0.elapsed().as_nanos() as u64) < ns {}
                });
            }
            Some("counts") => {
                let program = Program::new(num(&w, 1), num(&w, 3) as usize);
                let grid = [num(&w, 6) as u32, num(&w, 7) as u32, num(&w, 8) as u32];
                probe::record_counts(
                    &program,
                    num(&w, 2) as usize,
                    num(&w, 4) as usize,
                    num(&w, 5) as usize,
                    grid,
                );
            }
            Some("kernel") => probe::record_kernel_ns(num(&w, 1)),
            Some("emit") => {
                let window = if w[5] == "-" { None } else { Some(num(&w, 5)) };
                probe::emit(
                    num(&w, 1),
                    num(&w, 2),
                    num(&w, 3),
                    num(&w, 4),
                    window,
                    num(&w, 6),
                    num(&w, 7),
                );
            }
            Some(other) => panic!("unknown script call {other}"),
        }
    }
}
