//! Test support shared by integration tests (`mod support;`) and the lab example (which
//! includes this file with `#[path]`).

// Each test binary uses only part of the support code.
#![allow(dead_code, unused_imports)]

pub mod certificates;
pub mod ci;
pub mod closed_port;
pub mod fake_apiserver;
pub mod prometheus;
pub mod pushgateway;
pub mod served;
pub mod vcsim;
pub mod vm_operator;
