//! The one place an HTTP client starts: reqwest is built with rustls but without a crypto provider
//! of its own (see Cargo.toml), so building a client before one is installed would panic. Every
//! client (`measure`'s, replay's readiness probe, `download.rs`) starts from [`builder`], which
//! installs *ring*'s provider first (once per process).

/// A blocking client builder, with the TLS crypto provider installed.
pub fn builder() -> reqwest::blocking::ClientBuilder {
    // A second call finds it installed, which is fine. rustls 0.23.48 deprecates ring's provider
    // for lacking post-quantum key exchange (aws-lc-rs has it); for public files whose digest can
    // be pinned with --sha256, and for plain-http servers on the machine, that is accepted here,
    // for a build minutes shorter (see Cargo.toml and docs/security.md).
    #[allow(deprecated)]
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::blocking::Client::builder()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_with_tls() {
        let client = super::builder().https_only(true).build();
        assert!(client.is_ok(), "{:?}", client.err());
    }
}
