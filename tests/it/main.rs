//! premerge's one integration test binary. Each area has its own module; `common`
//! holds the hermetic repository builder and the runner of the real binary.

mod common;

mod budget;
mod foundation;
mod gate;
mod install;
mod review;
mod scan;
mod stripes;
mod waves;
