use super::*;

/// A file: 8-byte length, the JSON, then `data` bytes.
fn file(json: &str, data: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.safetensors");
    let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(json.as_bytes());
    bytes.resize(bytes.len() + data, 7);
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

fn error(json: &str, data: usize) -> String {
    let (_d, path) = file(json, data);
    read_header(&path).unwrap_err().to_string().replace(&path.display().to_string(), "F")
}

#[test]
fn reads_a_valid_header_in_data_order() {
    let (_d, path) = file(
        r#"{"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}"#,
        12,
    );
    let h = read_header(&path).unwrap();
    assert_eq!(h.tensors.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(h.metadata, vec![("format".to_string(), "pt".to_string())]);
    assert_eq!(h.tensors[1].elem_size(), Some(4));
}

#[test]
fn every_malformed_class_is_a_located_error() {
    let t = |name: &str, dtype: &str, shape: &str, b: u64, e: u64| {
        format!(r#""{name}":{{"dtype":"{dtype}","shape":{shape},"data_offsets":[{b},{e}]}}"#)
    };
    // Header length beyond the file.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.safetensors");
    let mut bytes = 1000u64.to_le_bytes().to_vec();
    bytes.extend_from_slice(b"{}");
    std::fs::write(&p, bytes).unwrap();
    let e = read_header(&p).unwrap_err();
    assert_eq!(e.place, "header length");
    assert!(e.message.contains("1000 bytes, beyond the end of the file (10 bytes)"), "{e}");
    // Too short.
    std::fs::write(&p, b"abc").unwrap();
    assert!(read_header(&p).unwrap_err().message.contains("too short"));
    // Above the limit.
    std::fs::write(&p, (MAX_HEADER + 1).to_le_bytes()).unwrap();
    assert!(read_header(&p).unwrap_err().message.contains("100 MB limit"));
    // JSON errors with line and column inside the header.
    assert_eq!(error("{\n \"a\": }", 0), "F: header line 2, column 7: invalid JSON: expected value at line 2 column 7");
    assert_eq!(error("[1]", 0), "F: header: the JSON header is not an object");
    // Overlapping offsets.
    let j = format!("{{{},{}}}", t("a", "U8", "[4]", 0, 4), t("b", "U8", "[4]", 2, 6));
    assert_eq!(error(&j, 6), "F: tensor \"b\": data_offsets [2, 6] overlap those of \"a\" (which end at 4)");
    // A gap.
    let j = format!("{{{},{}}}", t("a", "U8", "[4]", 0, 4), t("b", "U8", "[4]", 5, 9));
    assert_eq!(
        error(&j, 9),
        "F: tensor \"b\": data_offsets start at 5 but the previous tensor ends at 4: a gap in the data"
    );
    // Out of order (end before begin).
    let j = format!("{{{}}}", t("a", "U8", "[0]", 4, 0));
    assert_eq!(error(&j, 4), "F: tensor \"a\": data_offsets [4, 0] are out of order (end before begin)");
    // Size that disagrees with dtype × shape.
    let j = format!("{{{}}}", t("w", "BF16", "[2, 3]", 0, 10));
    assert_eq!(
        error(&j, 10),
        "F: tensor \"w\": 10 bytes of data, but BF16 × [2, 3] needs 12: the size disagrees with dtype × shape"
    );
    // Data beyond the file / trailing bytes.
    let j = format!("{{{}}}", t("w", "U8", "[8]", 0, 8));
    assert!(error(&j, 4).contains("the data ends at byte"), "{}", error(&j, 4));
    assert!(error(&j, 4).contains("beyond its end"));
    assert!(error(&j, 9).contains("before its end"));
    // Missing fields, wrong types.
    assert_eq!(error(r#"{"a":{"shape":[1],"data_offsets":[0,1]}}"#, 1), "F: tensor \"a\": no \"dtype\"");
    assert_eq!(
        error(r#"{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}"#, 1),
        "F: tensor \"a\": shape entry -1 is not a non-negative integer"
    );
    assert_eq!(
        error(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}}"#, 1),
        "F: tensor \"a\": \"data_offsets\" is not a [begin, end] pair"
    );
    assert_eq!(
        error(r#"{"__metadata__":{"x":1}}"#, 0),
        "F: __metadata__: value of \"x\" is not a string (safetensors allows only strings)"
    );
    // Shape overflow.
    let j = format!("{{{}}}", t("w", "F64", "[4294967296, 4294967296, 4294967296]", 0, 8));
    assert!(error(&j, 8).contains("needs more than 2^64"));
}

#[test]
fn unknown_dtypes_are_kept() {
    let (_d, path) = file(r#"{"q":{"dtype":"F3_NEW","shape":[3],"data_offsets":[0,5]}}"#, 5);
    let h = read_header(&path).unwrap();
    assert_eq!(h.tensors[0].elem_size(), None);
}

proptest::proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200), len in 0u64..400) {
        let _ = parse_header(Path::new("p"), bytes.len() as u64, len, &bytes);
        let _ = parse_header(Path::new("p"), len, bytes.len() as u64 + len, &bytes);
    }
}

/// What `parse_header` returns, comparable.
fn outcome(r: &Result<Header, HeaderError>) -> String {
    match r {
        Ok(h) => format!("{h:?}"),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn the_fast_path_declines_what_value_reads_differently() {
    let t = |name: &str, b: u64, e: u64| {
        format!(r#""{name}":{{"dtype":"U8","shape":[{}],"data_offsets":[{b},{e}]}}"#, e - b)
    };
    let cases = [
        // A repeated name: `Value` keeps the last, which leaves a gap here.
        format!("{{{},{}}}", t("a", 0, 2), t("a", 2, 4)),
        // Zero-length tensors under one name tile the data either way.
        format!("{{{},{},{}}}", t("z", 0, 0), t("z", 0, 0), t("b", 0, 4)),
        // Metadata: a repeated key, a repeated `__metadata__`, null.
        format!(r#"{{"__metadata__":{{"k":"1","k":"2"}},{}}}"#, t("b", 0, 4)),
        format!(r#"{{"__metadata__":{{"k":"1"}},"__metadata__":{{"j":"2"}},{}}}"#, t("b", 0, 4)),
        format!(r#"{{"__metadata__":null,{}}}"#, t("b", 0, 4)),
        // A repeated field inside an entry, an extra field, a float shape.
        r#"{"a":{"dtype":"U8","dtype":"U16","shape":[2],"data_offsets":[0,4]}}"#.to_string(),
        r#"{"a":{"dtype":"U8","x":[1],"shape":[4],"data_offsets":[0,4]}}"#.to_string(),
        r#"{"a":{"dtype":"U8","shape":[4.0],"data_offsets":[0,4]}}"#.to_string(),
        r#"{"a":{"dtype":"U8","shape":[-0],"data_offsets":[0,0]},"b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#
            .to_string(),
        // Escapes in names; metadata keys out of order.
        format!(r#"{{"__metadata__":{{"z":"1","a":"2"}},{}}}"#, t("b\\u00e9\\n", 0, 4)),
    ];
    for json in cases {
        let exact = parse_header_exact(Path::new("p"), json.len() as u64, json.len() as u64 + 12, json.as_bytes());
        let either = parse_header(Path::new("p"), json.len() as u64, json.len() as u64 + 12, json.as_bytes());
        assert_eq!(outcome(&either), outcome(&exact), "{json}");
        let fast = fast::parse(Path::new("p"), json.len() as u64, json.len() as u64 + 12, json.as_bytes());
        if let Some(h) = fast {
            assert_eq!(format!("{h:?}"), outcome(&exact), "{json}");
        }
    }
}

/// A header-like JSON text from small parts: names that repeat, dtypes the
/// table knows or not, shapes that fit their range or not, offsets that
/// tile or not, metadata, and now and then a wrong type or a stray field.
fn header_text() -> impl proptest::strategy::Strategy<Value = (String, u64)> {
    use proptest::prelude::*;
    let entry = (
        prop::sample::select(vec!["a", "b", "c", "w.0", "é", "__metadata__"]),
        prop::sample::select(vec!["U8", "F16", "F32", "BOOL", "X9", "F4"]),
        prop::collection::vec(0u64..4, 0..3),
        0u64..3,
        0u8..12,
    );
    (prop::collection::vec(entry, 0..6), 0u64..24, any::<bool>()).prop_map(|(entries, extra, meta)| {
        let mut parts = Vec::new();
        let mut at = 0u64;
        if meta {
            parts.push(r#""__metadata__":{"format":"pt","a":"b"}"#.to_string());
        }
        for (name, dtype, shape, slack, odd) in entries {
            if name == "__metadata__" {
                parts.push(format!(r#""__metadata__":{}"#, if odd % 2 == 0 { "null" } else { r#"{"x":1}"# }));
                continue;
            }
            let bits = dtype_bits(dtype).unwrap_or(8);
            let len = (shape.iter().product::<u64>() * bits).div_ceil(8) + if odd == 0 { slack } else { 0 };
            let begin = if odd == 1 { at.saturating_sub(slack) } else { at };
            let shape_text = match odd {
                2 => format!("{:?}", shape.iter().map(|&d| d as f64).collect::<Vec<_>>()),
                3 => "\"x\"".into(),
                _ => format!("{shape:?}"),
            };
            let offsets = if odd == 4 { format!("[{begin}]") } else { format!("[{begin},{}]", begin + len) };
            let stray = if odd == 5 { r#","stray":{"deep":[1,2]}"# } else { "" };
            parts.push(format!(
                r#""{name}":{{"dtype":"{dtype}","shape":{shape_text},"data_offsets":{offsets}{stray}}}"#
            ));
            at = begin + len;
        }
        (format!("{{{}}}", parts.join(",")), at + extra % 3)
    })
}

proptest::proptest! {
    #[test]
    fn the_fast_path_agrees_with_the_exact_one((json, data) in header_text()) {
        let n = json.len() as u64;
        let exact = parse_header_exact(Path::new("p"), n, 8 + n + data, json.as_bytes());
        if let Some(h) = fast::parse(Path::new("p"), n, 8 + n + data, json.as_bytes()) {
            proptest::prop_assert_eq!(format!("{h:?}"), outcome(&exact));
        }
        let either = parse_header(Path::new("p"), n, 8 + n + data, json.as_bytes());
        proptest::prop_assert_eq!(outcome(&either), outcome(&exact));
    }
}
