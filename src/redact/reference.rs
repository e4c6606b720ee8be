use super::*;

pub(super) fn redact_str(r: &Redactor, text: &str) -> (String, usize) {
    let mut found = Vec::new();
    let (mut out, mut count) = detect(r, text, &mut found);
    count += r.replace_known(&mut out, &r.known(found));
    let mut random = Vec::new();
    count += redact_entropy(r, &mut out, &mut random);
    count += r.replace_known(&mut out, &r.known(random));
    (out, count)
}

fn detect(r: &Redactor, text: &str, found: &mut Vec<(String, String)>) -> (String, usize) {
    if r.settings.disabled {
        return (text.to_owned(), 0);
    }
    let mut out = text.to_owned();
    let mut count = 0;
    for pattern in &r.settings.patterns {
        count += apply(r, &mut out, "policy", pattern, found);
    }
    let lower = out.to_ascii_lowercase();
    for detector in DETECTORS.iter() {
        if !detector.triggered(&out, &lower) {
            continue;
        }
        if let Some(regex) = detector.regex() {
            count += apply(r, &mut out, detector.kind, regex, found);
        }
    }
    (out, count)
}

fn apply(
    r: &Redactor,
    text: &mut String,
    kind: &str,
    regex: &Regex,
    found: &mut Vec<(String, String)>,
) -> usize {
    if !regex.is_match(text) {
        return 0;
    }
    let markers: Vec<(usize, usize)> = MARKER
        .as_ref()
        .map(|m| m.find_iter(text).map(|m| (m.start(), m.end())).collect())
        .unwrap_or_default();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut count = 0;
    // The fast engines find each match; captures (slow over a long
    // text) are resolved only at each match's start.
    for found_at in regex.find_iter(text) {
        let Some(caps) = regex.captures_at(text, found_at.start()) else {
            continue;
        };
        let Some(whole) = caps.get(0) else { continue };
        let secret = ["s", "q", "d"]
            .iter()
            .find_map(|name| caps.name(name))
            .unwrap_or(whole);
        let value = secret.as_str();
        if value.is_empty()
            || value.starts_with('$')
            || markers
                .iter()
                .any(|(start, end)| secret.start() < *end && *start < secret.end())
        {
            continue;
        }
        out.push_str(&text[last..secret.start()]);
        out.push_str(&r.marker(kind, value));
        found.push((kind.to_owned(), value.to_owned()));
        last = secret.end();
        count += 1;
    }
    out.push_str(&text[last..]);
    *text = out;
    count
}

fn redact_entropy(r: &Redactor, text: &mut String, found: &mut Vec<(String, String)>) -> usize {
    if r.settings.disabled {
        return 0;
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut count = 0;
    for (run_start, run_end) in tokens(text) {
        let anchored = run_start > 0 && text.as_bytes()[run_start - 1] == b'.';
        for (start, end) in random_parts(&text.as_bytes()[run_start..run_end], anchored) {
            let (start, end) = (run_start + start, run_start + end);
            let token = &text[start..end];
            out.push_str(&text[last..start]);
            out.push_str(&r.marker("high_entropy", token));
            found.push(("high_entropy".to_owned(), token.to_owned()));
            last = end;
            count += 1;
        }
    }
    if count > 0 {
        out.push_str(&text[last..]);
        *text = out;
    }
    count
}

pub(super) fn redact_value(r: &Redactor, value: &mut Value) -> usize {
    if r.settings.disabled {
        return 0;
    }
    let mut found = Vec::new();
    let mut count = detect_value(r, value, &mut found);
    let known = r.known(found);
    if !known.is_empty() {
        count += r.replace_value(value, &known);
    }
    let mut random = Vec::new();
    count += entropy_value(r, value, &mut random);
    let known = r.known(random);
    if !known.is_empty() {
        count += r.replace_value(value, &known);
    }
    count
}

fn entropy_value(r: &Redactor, value: &mut Value, found: &mut Vec<(String, String)>) -> usize {
    match value {
        Value::String(s) => redact_entropy(r, s, found),
        Value::Array(items) => items.iter_mut().map(|v| entropy_value(r, v, found)).sum(),
        Value::Object(map) => map.values_mut().map(|v| entropy_value(r, v, found)).sum(),
        _ => 0,
    }
}

fn detect_value(r: &Redactor, value: &mut Value, found: &mut Vec<(String, String)>) -> usize {
    match value {
        Value::String(s) => {
            let (redacted, count) = detect(r, s, found);
            if count > 0 {
                *s = redacted;
            }
            count
        }
        Value::Array(items) => items.iter_mut().map(|v| detect_value(r, v, found)).sum(),
        Value::Object(map) => map.values_mut().map(|v| detect_value(r, v, found)).sum(),
        _ => 0,
    }
}

pub(super) fn redact_batch(
    r: &Redactor,
    payloads: Vec<Option<Vec<u8>>>,
    found: &mut Vec<(String, String)>,
) -> Vec<(Vec<u8>, usize)> {
    if r.settings.disabled {
        return payloads
            .into_iter()
            .map(|p| (p.unwrap_or_default(), 0))
            .collect();
    }
    let mut parsed: Vec<(Option<Vec<u8>>, Option<Value>, usize)> = payloads
        .into_iter()
        .map(|payload| {
            let value = payload
                .as_deref()
                .and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok());
            (payload, value, 0)
        })
        .collect();
    for (_, value, count) in &mut parsed {
        if let Some(value) = value {
            *count += detect_value(r, value, found);
        }
    }
    let known = r.known(found.clone());
    for (_, value, count) in &mut parsed {
        if let Some(value) = value {
            *count += r.replace_value(value, &known);
        }
    }
    let mut random = Vec::new();
    for (_, value, count) in &mut parsed {
        if let Some(value) = value {
            *count += entropy_value(r, value, &mut random);
        }
    }
    let known = r.known(random.clone());
    for (_, value, count) in &mut parsed {
        if let Some(value) = value {
            *count += r.replace_value(value, &known);
        }
    }
    found.extend(random);
    parsed
        .into_iter()
        .map(|(payload, value, count)| {
            let payload = payload.unwrap_or_default();
            let Some(mut value) = value else {
                return (payload, 0);
            };
            if count == 0 {
                return (payload, 0);
            }
            if let Value::Object(map) = &mut value {
                map.insert("redactions".to_owned(), Value::from(count as u64));
            }
            match serde_json::to_vec(&value) {
                Ok(bytes) => (bytes, count),
                Err(_) => (payload, 0),
            }
        })
        .collect()
}
/// The maximal runs of token characters at least [`ENTROPY_MIN_LEN`]
/// long, found byte by byte.
pub(super) fn tokens(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let is_token =
        |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'=' | b'-');
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            while at < bytes.len() && !is_token(bytes[at]) {
                at += 1;
            }
            let start = at;
            while at < bytes.len() && is_token(bytes[at]) {
                at += 1;
            }
            if at - start >= ENTROPY_MIN_LEN {
                return Some((start, at));
            }
        }
        None
    })
}
