//! Test support shared by integration tests (`mod support;`).

// Each test binary uses only part of the support code.
#![allow(dead_code)]

pub mod vcsim;
