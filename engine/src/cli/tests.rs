use super::*;

fn serve_args(extra: &[&str]) -> ServeArgs {
    let argv = ["rigaudit-engine", "serve", "m.gguf", "--name", "m"];
    match Cli::try_parse_from(argv.iter().chain(extra)).unwrap().cmd {
        Cmd::Serve(a) => a,
        _ => panic!("not serve"),
    }
}

#[test]
fn decode_delay_defaults_to_none_and_is_named_only_when_set() {
    assert_eq!(serve_args(&[]).decode_delay_ms, 0);
    assert_eq!(serve_args(&["--decode-delay-ms", "12"]).decode_delay_ms, 12);
    assert!(
        Cli::try_parse_from(["e", "serve", "m", "--name", "m", "--decode-delay-ms", "-1"]).is_err()
    );
    assert_eq!(delay_word(0, 0), "");
    assert_eq!(delay_word(12, 0), " decode_delay_ms=12");
    assert_eq!(delay_word(0, 480), " decode_delay_us=480");
    let us = serve_args(&["--decode-delay-us", "480"]);
    let spin = engine::DecodeDelay::Spin(std::time::Duration::from_micros(480));
    assert_eq!(decode_delay(&us), spin);
    let ms = serve_args(&["--decode-delay-ms", "3"]);
    let sleep = engine::DecodeDelay::Sleep(std::time::Duration::from_millis(3));
    assert_eq!(decode_delay(&ms), sleep);
    assert_eq!(decode_delay(&serve_args(&[])), engine::DecodeDelay::None);
    let both = ["e", "serve", "m", "--name", "m", "--decode-delay-ms", "1"];
    let both = both.iter().chain(&["--decode-delay-us", "5"]);
    assert!(Cli::try_parse_from(both).is_err(), "one unit at a time");
}

#[test]
fn reply_shapes_default_to_none_are_parsed_by_the_parser_and_replayable() {
    assert!(serve_args(&[]).reply_shapes.is_none());
    assert_eq!(shapes_word(None), "");
    let a = serve_args(&["--reply-shapes", "stop@2, http500@3/2"]);
    let spec = a.reply_shapes.expect("parsed");
    assert_eq!(spec.shape_of(2), Some(crate::shapes::Shape::Stop));
    assert_eq!(shapes_word(Some(&spec)), " reply_shapes=stop@2,http500@3/2");
    let argv = |spec: &str| -> Vec<String> {
        ["serve", "m.gguf", "--name", "m", "--reply-shapes", spec]
            .map(String::from)
            .to_vec()
    };
    assert!(replayable(&argv("hang=500@1/1")).is_ok());
    let why = replayable(&argv("explode@1")).unwrap_err();
    assert!(why.contains("unknown shape `explode`"), "{why}");
}
