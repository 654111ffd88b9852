//! vyre_foundation.rs: a stand-in for the two items of the vyre_foundation
//! crate that the reference probe (../shared/reference/dispatch_phase_probe.rs)
//! uses, so that spec/reference_spec.lua can compile the reference as it is
//! and drive it beside ours: `ir::Program::buffers` and
//! `transform::visit::walk_nodes`. A program here is only what the probe
//! counts: how many nodes a walk visits and how many buffers it declares.

pub mod ir {
    /// One IR node, as a walk hands it to its visitor.
    pub struct Node;

    /// A program as the probe sees it.
    pub struct Program {
        pub nodes: u64,
        buffers: Vec<()>,
    }

    impl Program {
        pub fn new(nodes: u64, buffers: usize) -> Program {
            let mut b: Vec<()> = Vec::new();
            // A zero-sized element: any length is sound and costs nothing.
            unsafe { b.set_len(buffers) };
            Program { nodes, buffers: b }
        }

        /// The buffer declarations (only their count is read).
        pub fn buffers(&self) -> &[()] {
            &self.buffers
        }
    }
}

pub mod transform {
    pub mod visit {
        use crate::ir::{Node, Program};

        /// Calls `visit` once per node of the program.
        pub fn walk_nodes<F: FnMut(&Node)>(program: &Program, mut visit: F) {
            for _ in 0..program.nodes {
                visit(&Node);
            }
        }
    }
}
