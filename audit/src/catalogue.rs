//! The catalogue's version. The catalogue itself (every row of every family, in `rigaudit checks`
//! order) is [`crate::table::all`].

/// The rules' version: the crate version and a digest (FNV-1a, 32 bits) of every check's id,
/// severity and doc, so a report names the exact catalogue it was judged by and a page that passed
/// under one catalogue can be re-checked under it.
pub fn version() -> String {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(digest).clone()
}

/// [`version`], computed (once a process: a tree of thousands of runs names it in each report).
fn digest() -> String {
    let mut h: u32 = 0x811c_9dc5;
    for c in crate::table::all() {
        for b in
            c.id.bytes()
                .chain(c.severity.name().bytes())
                .chain(c.doc.bytes())
                .chain([0u8])
        {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    format!("{}+{h:08x}", env!("CARGO_PKG_VERSION"))
}
