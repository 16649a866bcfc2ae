//! Attacks on ssh_options (see attack.rs for what each asserts).

#[allow(unused_imports)]
use super::attack::{assert_clean, Attack, Scratch, Surface};
