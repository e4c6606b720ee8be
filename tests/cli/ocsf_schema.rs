//! A validator of OCSF events against the vendored OCSF schema source
//! (`fixtures/ocsf/schema`, see its README): the class and its category
//! and base event, the profiles the event lists, and each object type,
//! each with its `extends` chain and `$include`s resolved as the OCSF
//! metaschema defines them. It checks what a SIEM's OCSF validation
//! checks: every attribute is one the class (or an applied profile, or the
//! object) defines; values have their type (objects validated in turn,
//! arrays element by element); enumerated ids hold a defined value;
//! required attributes are present; objects meet their `at_least_one` and
//! `just_one` constraints; `type_uid` is `class_uid * 100 + activity_id`
//! and `category_uid` the class's category.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// One attribute of a compiled class or object.
#[derive(Debug, Clone)]
struct Attribute {
    kind: String,
    array: bool,
    required: bool,
    /// The values an enumerated attribute may hold, as strings.
    enumeration: Option<Vec<String>>,
}

#[derive(Debug, Default, Clone)]
struct Compiled {
    attributes: HashMap<String, Attribute>,
    at_least_one: Vec<String>,
    just_one: Vec<String>,
}

pub struct Schema {
    root: PathBuf,
    dictionary: Map<String, Value>,
    types: Map<String, Value>,
    categories: Map<String, Value>,
    objects: HashMap<String, Compiled>,
    classes: HashMap<(u64, Vec<String>), (Compiled, u64)>,
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl Schema {
    pub fn load() -> Self {
        let root = crate::support::fixture("ocsf/schema");
        let dictionary = load(&root.join("dictionary.json"));
        Schema {
            types: dictionary["types"]["attributes"]
                .as_object()
                .unwrap()
                .clone(),
            dictionary: dictionary["attributes"].as_object().unwrap().clone(),
            categories: load(&root.join("categories.json"))["attributes"]
                .as_object()
                .unwrap()
                .clone(),
            root,
            objects: HashMap::new(),
            classes: HashMap::new(),
        }
    }

    /// The attributes of a definition file with its `$include`s, and
    /// those of what it extends (`extends` found by `find`), child first.
    fn definition_chain(
        &self,
        definition: &Value,
        find: &dyn Fn(&str) -> Option<Value>,
    ) -> Vec<Value> {
        let mut chain = vec![definition.clone()];
        let mut current = definition.clone();
        while let Some(parent) = current["extends"].as_str().and_then(find) {
            chain.push(parent.clone());
            current = parent;
        }
        chain
    }

    /// Merges `chain` (child first) into one compiled definition; an
    /// included profile counts only when it is `applied`.
    fn compile(&self, chain: &[Value], applied: &[String]) -> Compiled {
        let mut compiled = Compiled::default();
        for definition in chain.iter().rev() {
            let attributes = definition["attributes"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let mut merged: Vec<(String, Value)> = Vec::new();
            for include in includes(&attributes) {
                let profile = include
                    .strip_prefix("profiles/")
                    .and_then(|p| p.strip_suffix(".json"));
                if profile.is_some_and(|p| !applied.iter().any(|a| a == p)) {
                    continue;
                }
                let profile = load(&self.root.join(include));
                for (name, attribute) in profile["attributes"].as_object().unwrap() {
                    merged.push((name.clone(), attribute.clone()));
                }
            }
            for (name, attribute) in attributes {
                if name != "$include" {
                    merged.push((name, attribute));
                }
            }
            for (name, attribute) in merged {
                self.add(&mut compiled, &name, &attribute);
            }
            let constraints = &definition["constraints"];
            if let Some(list) = constraints["at_least_one"].as_array() {
                compiled.at_least_one = strings(list);
            }
            if let Some(list) = constraints["just_one"].as_array() {
                compiled.just_one = strings(list);
            }
        }
        compiled
    }

    /// Adds (or refines) attribute `name` as `attribute` describes it.
    fn add(&self, compiled: &mut Compiled, name: &str, attribute: &Value) {
        let known = &self.dictionary[name];
        let previous = compiled.attributes.get(name).cloned();
        let kind = attribute["type"]
            .as_str()
            .or_else(|| previous.as_ref().map(|p| p.kind.as_str()))
            .or_else(|| known["type"].as_str())
            .unwrap_or_else(|| panic!("attribute `{name}` has no type"))
            .to_owned();
        // An enum merges down: the dictionary's values (`0` Unknown, `99`
        // Other) and those each definition adds.
        let mut values: Vec<String> = previous
            .as_ref()
            .and_then(|p| p.enumeration.clone())
            .unwrap_or_default();
        for e in [known["enum"].as_object(), attribute["enum"].as_object()]
            .into_iter()
            .flatten()
        {
            for key in e.keys() {
                if !values.contains(key) {
                    values.push(key.clone());
                }
            }
        }
        let enumeration = (!values.is_empty()).then_some(values);
        let required = match attribute["requirement"].as_str() {
            Some(r) => r == "required",
            None => previous.as_ref().is_some_and(|p| p.required),
        };
        compiled.attributes.insert(
            name.to_owned(),
            Attribute {
                array: known["is_array"].as_bool().unwrap_or(false),
                kind,
                required,
                enumeration,
            },
        );
    }

    fn object(&mut self, name: &str) -> &Compiled {
        if !self.objects.contains_key(name) {
            let root = self.root.clone();
            let find = |n: &str| {
                let path = root.join(format!("objects/{n}.json"));
                path.exists().then(|| load(&path))
            };
            let definition = find(name).unwrap_or_else(|| panic!("no object `{name}` vendored"));
            let chain = self.definition_chain(&definition, &find);
            // An object's own profile includes (e.g. data classification)
            // are not applied by gavel's events.
            let compiled = self.compile(&chain, &[]);
            self.objects.insert(name.to_owned(), compiled);
        }
        &self.objects[name]
    }

    /// The class whose `class_uid` is `uid`, with the profiles `applied`.
    fn class(&self, uid: u64, applied: &[String]) -> (Compiled, u64) {
        let events = self.root.join("events");
        let mut files = Vec::new();
        collect(&events, &mut files);
        let find = |name: &str| files.iter().map(|f| load(f)).find(|d| d["name"] == name);
        for file in &files {
            let definition = load(file);
            let Some(class) = definition["uid"].as_u64() else {
                continue;
            };
            let chain = self.definition_chain(&definition, &find);
            // The category is named by the class or what it extends.
            let category = chain
                .iter()
                .find_map(|d| d["category"].as_str())
                .and_then(|c| self.categories[c]["uid"].as_u64())
                .unwrap_or(0);
            if category * 1000 + class != uid {
                continue;
            }
            let mut compiled = self.compile(&chain, applied);
            for profile in applied {
                let supported = chain.iter().any(|d| {
                    d["profiles"]
                        .as_array()
                        .is_some_and(|p| p.iter().any(|x| x == profile.as_str()))
                });
                assert!(supported, "class {uid} does not take profile `{profile}`");
                let definition = load(&self.root.join(format!("profiles/{profile}.json")));
                for (name, attribute) in definition["attributes"].as_object().unwrap() {
                    if !compiled.attributes.contains_key(name) {
                        self.add(&mut compiled, name, attribute);
                    }
                }
            }
            return (compiled, category);
        }
        panic!("no class {uid} vendored")
    }

    /// Every problem of `event` against the schema (empty: it validates).
    pub fn validate(&mut self, event: &Value) -> Vec<String> {
        let mut problems = Vec::new();
        let class_uid = event["class_uid"].as_u64().unwrap_or(0);
        let profiles: Vec<String> = event["metadata"]["profiles"]
            .as_array()
            .map(|p| strings(p))
            .unwrap_or_default();
        let key = (class_uid, profiles.clone());
        if !self.classes.contains_key(&key) {
            let compiled = self.class(class_uid, &profiles);
            self.classes.insert(key.clone(), compiled);
        }
        let (class, category) = self.classes[&key].clone();
        if event["category_uid"].as_u64() != Some(category) {
            problems.push(format!("category_uid is not {category}"));
        }
        let activity = event["activity_id"].as_u64().unwrap_or(u64::MAX);
        if event["type_uid"].as_u64() != Some(class_uid * 100 + activity) {
            problems.push("type_uid is not class_uid * 100 + activity_id".into());
        }
        // The class, category and type uids are generated for each class,
        // not enumerated in the source: they are checked above.
        let mut class = class;
        for generated in ["class_uid", "category_uid", "type_uid"] {
            if let Some(attribute) = class.attributes.get_mut(generated) {
                attribute.enumeration = None;
            }
        }
        if event["class_uid"]
            .as_u64()
            .is_none_or(|c| c / 1000 != category)
        {
            problems.push(format!("class_uid is not of category {category}"));
        }
        self.check_object(&class, event, "", &mut problems);
        problems
    }

    fn check_object(
        &mut self,
        compiled: &Compiled,
        value: &Value,
        at: &str,
        problems: &mut Vec<String>,
    ) {
        let Some(object) = value.as_object() else {
            problems.push(format!("{at}: not an object"));
            return;
        };
        for (name, attribute) in &compiled.attributes {
            if attribute.required && object.get(name).is_none_or(Value::is_null) {
                problems.push(format!("{at}.{name}: required, missing"));
            }
        }
        if !compiled.at_least_one.is_empty()
            && !compiled.at_least_one.iter().any(|n| object.contains_key(n))
        {
            problems.push(format!("{at}: needs one of {:?}", compiled.at_least_one));
        }
        if !compiled.just_one.is_empty()
            && compiled
                .just_one
                .iter()
                .filter(|n| object.contains_key(*n))
                .count()
                != 1
        {
            problems.push(format!(
                "{at}: needs exactly one of {:?}",
                compiled.just_one
            ));
        }
        for (name, item) in object {
            let path = format!("{at}.{name}");
            let Some(attribute) = compiled.attributes.get(name).cloned() else {
                problems.push(format!("{path}: not an attribute here"));
                continue;
            };
            if attribute.array {
                match item.as_array() {
                    Some(items) => {
                        for (i, element) in items.iter().enumerate() {
                            self.check_value(
                                &attribute,
                                element,
                                &format!("{path}[{i}]"),
                                problems,
                            );
                        }
                    }
                    None => problems.push(format!("{path}: not an array")),
                }
            } else {
                self.check_value(&attribute, item, &path, problems);
            }
        }
    }

    fn check_value(
        &mut self,
        attribute: &Attribute,
        value: &Value,
        at: &str,
        problems: &mut Vec<String>,
    ) {
        if let Some(values) = &attribute.enumeration {
            let text = match value {
                Value::Number(n) => n.to_string(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if !values.contains(&text) {
                problems.push(format!("{at}: {text} is not one of {values:?}"));
            }
        }
        let mut kind = attribute.kind.clone();
        // Derived scalar types reduce to their base type.
        while let Some(base) = self.types.get(&kind).and_then(|t| t["type"].as_str()) {
            kind = base.to_owned();
        }
        let ok = match kind.as_str() {
            "string_t" => value.is_string(),
            "integer_t" | "long_t" => value.is_i64() || value.is_u64(),
            "float_t" => value.is_number(),
            "boolean_t" => value.is_boolean(),
            "json_t" => true,
            "object" => value.is_object(),
            object => {
                let compiled = self.object(object).clone();
                self.check_object(&compiled, value, at, problems);
                return;
            }
        };
        if !ok {
            problems.push(format!("{at}: not a {kind}: {value}"));
        }
    }
}

fn includes(attributes: &Map<String, Value>) -> Vec<String> {
    match attributes.get("$include") {
        Some(Value::Array(list)) => strings(list),
        Some(Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    }
}

fn strings(list: &[Value]) -> Vec<String> {
    list.iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}
