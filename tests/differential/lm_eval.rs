//! Differential tests of lm_eval (see main.rs).
