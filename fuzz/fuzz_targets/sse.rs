//! The SSE reader of the measuring client: any bytes as a streamed reply.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let t = rigaudit_fuzz::sse::parse(data);
    // The reply text is what the stream sent: invalid UTF-8 is replaced (a byte by U+FFFD, three
    // bytes), so at most three times what came.
    assert!(t.text.len() <= 3 * data.len());
});
