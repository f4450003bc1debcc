// -o jsonpath=TEMPLATE and -o jsonpath-as-json=TEMPLATE against kubectl v1.32.4 itself: every
// expected value below is what kubectl printed, copied from its stdout (or its message, without
// the `error: ` it starts with). Most come from `kubectl get configmaps -o 'jsonpath=TEMPLATE'`
// against a stand-in API server on 127.0.0.1 that served `items` as a ConfigMapList: kubectl get
// needs a server to read from, but what it prints is its own printer's, on the List it builds
// from the items (`list` here). The last table needs no server: `kubectl create configmap
// --dry-run=client`. kubectl's execution errors go on past their first line (". Printing more
// information for debugging the template:", the template, a Go dump of the object); the messages
// here are that line up to there.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { compileJsonPath, parseJsonPath } from "../../src/output/jsonpath";
import { items, oddItems } from "../fixtures/kubectl-objects";
import { thrown } from "../fixtures/template-error";

/** What kubectl get hands its printer for several objects (get.go's printGeneric). */
const list = { apiVersion: "v1", items, kind: "List", metadata: { resourceVersion: "" } };

type Case = readonly [template: string, stdout: string];

function prints(title: string, data: unknown, cases: readonly Case[], asJson = false): void {
  describe(title, () => {
    for (const [template, stdout] of cases) test(template, () => assert.equal(parseJsonPath(template).execute(data, { asJson }), stdout));
  });
}

function refuses(title: string, data: unknown, cases: readonly Case[], asJson = false): void {
  describe(title, () => {
    for (const [template, message] of cases) test(template, () => assert.equal(thrown(() => parseJsonPath(template).execute(data, { asJson })).message, message));
  });
}

prints("paths, indexes, slices and unions", list, [
  ["{.kind}", "List"],
  ["{$.kind}", "List"],
  ["{ .kind }", "List"],
  ["{.items[*].metadata.name}", "web-0 db-0 cache-0"],
  ["{.items[0].metadata.name}", "web-0"],
  ["{.items[-1].metadata.name}", "cache-0"],
  ["{.items[-2].metadata.name}", "db-0"],
  ["{.items[1:3].metadata.name}", "db-0 cache-0"],
  ["{.items[0:3:2].metadata.name}", "web-0 cache-0"],
  ["{.items[1:].metadata.name}", "db-0 cache-0"],
  ["{.items[:2].metadata.name}", "web-0 db-0"],
  ["{.items[0].spec.ports[0:-1]}", "80"],
  ["{.items[0].spec.ports[0:2:1]}{.items[0].spec.ports[-1:]}", "80 443443"],
  ["{.items[0].spec.ports[1:1]}", ""],
  ["{.items[2].spec.containers[*]}", ""],
  ["{.items[2].spec.containers[0:0]}", ""],
  ["{.items[0,2].metadata.name}", "web-0 cache-0"],
  ["{.items[0].metadata['name','namespace']}", "web-0 default"],
  ["{.items[0].spec.containers[*]['name','image']}", "nginx sidecar nginx:1.27 busybox"],
  ["{.items[0]['metadata']['name']}", "web-0"],
  ["{.items[*]['status']}", '{"phase":"Running"} {"phase":"Pending"} {"phase":"Running"}'],
  ["{.items[*].spec.ports}", "[80,443] [5432]"],
  ["{.items[*].spec.ports[*]}", "80 443 5432"],
  ["{.items[*].metadata.labels.tier}", "front"],
  ["{.items[0].metadata.labels.*}", "web front"],
  ["{..phase}", "Running Pending Running"],
  ["{.items[2]..name}", "cache-0"],
  // A wildcard over a string walks its UTF-8 bytes.
  ["{.items[0].metadata.name.*}", "119 101 98 45 48"],
  // client-go stops at an empty array and drops what comes after it.
  ["{.items[2,0].spec.containers[*].name}", ""],
  ["{.items[0,2].spec.containers[*].name}", "nginx sidecar"],
  ["{.items[2,0].spec.containers}", '[] [{"image":"nginx:1.27","name":"nginx"},{"image":"busybox","name":"sidecar"}]'],
]);

// kubectl walks a map's values in Go's random order (run twenty times, {.items[0]..name} gave the first order 19 times
// and "nginx sidecar web-0" once); in key order, as here, is one of the orders kubectl prints.
prints("map values, in key order", list, [
  ["{.items[0]..name}", "web-0 nginx sidecar"],
  ["{.items[0].spec.*}", '1000000 [{"image":"nginx:1.27","name":"nginx"},{"image":"busybox","name":"sidecar"}] [80,443] 1.5 true 3 1e-05'],
]);

prints("quoted keys and escaped dots", list, [
  ["{.items[0].metadata.labels['app\\.kubernetes\\.io/name']}", "web"],
  ["{.items[0].metadata.labels.app\\.kubernetes\\.io/name}", "web"],
  ["{.items[0].data.a\\.b}", "dotted"],
  // ['a.b'] is .a.b in kubectl, not the key "a.b".
  ["{.items[0].data['a.b']}", ""],
]);

prints("filters", list, [
  ['{.items[?(@.status.phase=="Running")].metadata.name}', "web-0 cache-0"],
  ["{.items[?(@.status.phase=='Running')].metadata.name}", "web-0 cache-0"],
  ['{.items[?(@.status.phase!="Running")].metadata.name}', "db-0"],
  ['{.items[?(@.metadata.name == "web-0")].metadata.name}', "web-0"],
  ['{.items[?(@.metadata.name>"d")].metadata.name}', "web-0 db-0"],
  ['{.items[?(@.metadata.name=="a)b")].metadata.name}', ""],
  ["{.items[?(@.spec.replicas>1)].metadata.name}", "web-0 cache-0"],
  ["{.items[?(@.spec.replicas<3)].metadata.name}", "db-0"],
  ["{.items[?(@.spec.replicas<=3)].metadata.name}", "web-0 db-0"],
  ["{.items[?(@.spec.replicas>=3)].metadata.name}", "web-0 cache-0"],
  ["{.items[?(@.spec.ratio<1.0)].metadata.name}", "db-0"],
  ["{.items[?(@.spec.ready==true)].metadata.name}", "web-0"],
  ["{.items[?(@.spec.ports[0]==80)].metadata.name}", "web-0"],
  ["{.items[0].spec.ports[?(@==80)]}", "80"],
  ["{.items[0].spec.ports[?(@>80)]}", "443"],
  ["{.items[*].spec.ports[?(@>100)]}", "443 5432"],
  ['{.items[0].spec.containers[?(@.name=="nginx")].image}', "nginx:1.27"],
  ["{.items[?(@.metadata.name==\"web-0\")]['metadata']['name']}", "web-0"],
  ["{.items[?(@.metadata.labels)].metadata.name}", "web-0 db-0"],
  ["{.items[?(@.metadata.labels.tier)].metadata.name}", "web-0"],
  ["{.items[?(@.spec.nothing)].metadata.name}", "db-0"],
  // An existence test whose path fails counts as found (client-go returns its input beside the error).
  ["{.items[?(@.spec.ports[5])].metadata.name}", "web-0 db-0"],
]);

prints("range and end", list, [
  ['{range .items[*]}{.metadata.name}{"\\t"}{.status.phase}{"\\n"}{end}', "web-0\tRunning\ndb-0\tPending\ncache-0\tRunning\n"],
  ['{range .items[*]}{.metadata.name}:{range .spec.containers[*]}{.name},{end}{"\\n"}{end}', "web-0:nginx,sidecar,\ndb-0:postgres,\ncache-0:\n"],
  ['{range .items[*]}{range .spec.containers[*]}{.name}{"\\n"}{end}{end}', "nginx\nsidecar\npostgres\n"],
  ['{range .items[0].spec.ports[*]}{@}{" "}{end}', "80 443 "],
  ["{range .items[*].metadata.name}{@}-{end}", "web-0-db-0-cache-0-"],
  ["{range .items[*]}{.metadata.name}{end}", "web-0db-0cache-0"],
  ['{range .items[*]}[{.metadata.name}]{end}{"|"}{.kind}', "[web-0][db-0][cache-0]|List"],
  ['{range .items[*]}{.metadata.name}{"\\n"}{end}{range .items[*]}{.status.phase}{" "}{end}', "web-0\ndb-0\ncache-0\nRunning Pending Running "],
  ['{.items[?(@.status.phase=="Running")].metadata.name}{"\\n"}{range .items[?(@.spec.replicas>2)]}{.metadata.name}={.spec.replicas}{"\\n"}{end}', "web-0 cache-0\nweb-0=3\ncache-0=10\n"],
  ['{.items[*].metadata.name}{"\\n"}{range .items[*]}{.metadata.name}{"\\t"}{.metadata.labels.app\\.kubernetes\\.io/name}{"\\n"}{end}', "web-0 db-0 cache-0\nweb-0\tweb\ndb-0\tdb\ncache-0\t\n"],
  // Inside a range, $ is the element.
  ["{range .items[*]}{$.kind}{end}", "ConfigMapConfigMapConfigMap"],
  ['{range .items[?(@.x=="y")]}{.a}{end}after', "after"],
  // Without {end}, the body runs per element, then once more on the whole object, where it finds nothing.
  ["{range .items[*]}{.metadata.name}", "web-0db-0cache-0"],
  ["{range .items[*]}{.metadata.name}{range .spec.containers[*]}{.name}{end}", "web-0nginxsidecardb-0postgrescache-0"],
]);

prints("text, strings and values", list, [
  ["plain text", "plain text"],
  // Outside the braces nothing is unescaped: \n stays a backslash and an n.
  ["name: {.items[0].metadata.name}\\n", "name: web-0\\n"],
  ['{.items[0].metadata.name}\t{"tab"}', "web-0\ttab"],
  ["{.items[0].metadata.name}}", "web-0}"],
  ["{.items[0].metadata.name}{.kind}", "web-0List"],
  ['{.items[*].metadata.name}{"\\n"}', "web-0 db-0 cache-0\n"],
  ['{"a\\"b"}{\'c\\\'d\'}{"\\u00e9\\x41\\101"}', "a\"bc'déAA"],
  ['{"\\U0001F600\\u00e9"}', "😀é"],
  // A \x byte above 0x7f is not UTF-8 on its own: kubectl's stdout reads as U+FFFD.
  ['{"\\x80"}', "\uFFFD"],
  ["{5}{1.5}{-1}{+2}{true}", "51.5-12true"],
  ["{.items[0].metadata.labels}", '{"app.kubernetes.io/name":"web","tier":"front"}'],
  ["{.items[0].data}", '{"a.b":"dotted","html":"\\u003cb\\u003e\\u0026\\u003c/b\\u003e"}'],
  ["{.items[0].spec.big} {.items[0].spec.tiny} {.items[0].spec.ratio} {.items[0].spec.ready} {.items[1].spec.nothing}", "1000000 1e-05 1.5 true null"],
  // --allow-missing-template-keys=true: a missing key prints nothing.
  ["{.items[0].nope}|{.nope.deeper}|", "||"],
  ["{.}", ""],
  ["{.items[0].metadata.}", ""],
  ["{.items[1].spec.nothing.x}", ""],
  ["{.items[1].spec.nothing[0]}", ""],
  ["{.items[0].spec.ratio.x}", ""],
]);

refuses("templates kubectl cannot parse", list, [
  ["", "template format specified but no template given"],
  ["{.items[}", "error parsing jsonpath {.items[}, unterminated array"],
  ["{.kind", "error parsing jsonpath {.kind, unclosed action"],
  ["{.items[0]", "error parsing jsonpath {.items[0], unclosed action"],
  ["{.items[0].metadata.name}{", "error parsing jsonpath {.items[0].metadata.name}{, unclosed action"],
  ['{.items[0].metadata.name}{"\\n"', 'error parsing jsonpath {.items[0].metadata.name}{"\\n", unclosed action'],
  ["{.items[?(@.a==1}", "error parsing jsonpath {.items[?(@.a==1}, unterminated filter"],
  ["{.items[?(@.spec.ports[?(@>100)])].metadata.name}", "error parsing jsonpath {.items[?(@.spec.ports[?(@>100)])].metadata.name}, unterminated filter"],
  ["{.items[?(@.a==1)}", "error parsing jsonpath {.items[?(@.a==1)}, unclosed array expect ]"],
  ['{"abc}', 'error parsing jsonpath {"abc}, unterminated quoted string'],
  ['{"a\\\\"}', 'error parsing jsonpath {"a\\\\"}, unterminated quoted string'],
  ['{"\\q"}', 'error parsing jsonpath {"\\q"}, unquote string "\\q" error invalid syntax'],
  ["{'\\\"'}", "error parsing jsonpath {'\\\"'}, unquote string '\\\"' error invalid syntax"],
  ['{"\\uD800"}', 'error parsing jsonpath {"\\uD800"}, unquote string "\\uD800" error invalid syntax'],
  ['{"\\400"}', 'error parsing jsonpath {"\\400"}, unquote string "\\400" error invalid syntax'],
  ["{.items[a]}", "error parsing jsonpath {.items[a]}, invalid array index a"],
  ["{.items[-]}", "error parsing jsonpath {.items[-]}, array index - is not a number"],
  ["{.items[99999999999999999999]}", "error parsing jsonpath {.items[99999999999999999999]}, array index 99999999999999999999 is not a number"],
  ["{#}", "error parsing jsonpath {#}, unrecognized character in action: U+0023 '#'"],
  ["{..*}", "error parsing jsonpath {..*}, unrecognized character in action: U+002A '*'"],
  ["{€}", "error parsing jsonpath {€}, unrecognized character in action: U+20AC '€'"],
  ["{😀}", "error parsing jsonpath {😀}, unrecognized character in action: U+1F600 '😀'"],
  ["{\u0001}", "error parsing jsonpath {\u0001}, unrecognized character in action: U+0001"],
  ["{.kind\t}", "error parsing jsonpath {.kind\t}, unrecognized character in action: U+0009"],
  ["{....a}", "error parsing jsonpath {....a}, invalid multiple recursive descent"],
  ["{1.2.3}", "error parsing jsonpath {1.2.3}, cannot parse number 1.2.3"],
  ["{-}", "error parsing jsonpath {-}, cannot parse number -"],
]);

// kubectl quotes the template with Go's %q, which for these templates is JSON's quoting.
const failed = (template: string, message: string): Case => [template, `error executing jsonpath ${JSON.stringify(template)}: Error executing template: ${message}`];

refuses("templates that fail on the object", list, [
  failed("{.items[5]}", "array index out of bounds: index 5, length 3"),
  failed("{.items[0].spec.ports[5:]}", "array index out of bounds: index 5, length 2"),
  failed("{.items[0].spec.ports[-3]}", "array index out of bounds: index -1, length 2"),
  failed("{.items[2].spec.containers[0]}", "array index out of bounds: index 0, length 0"),
  failed("{range .items[9]}{.metadata.name}{end}", "array index out of bounds: index 9, length 3"),
  failed("{.items[0].spec.ports[::0]}", "step must be > 0"),
  failed("{.items[0].spec.ports[1:0]}", "starting index 1 is greater than ending index 0"),
  failed("{.items[0].metadata.name[0]}", "string is not array or slice"),
  failed("{.items[0].spec.ratio[0]}", "float64 is not array or slice"),
  failed("{.items[0].spec.ready[0]}", "bool is not array or slice"),
  failed("{.items[0].spec.big[0]}", "int64 is not array or slice"),
  failed("{..[0]}", "map[string]interface {} is not array or slice"),
  failed("{.items[0].metadata[?(@.x)]}", "map[labels:map[app.kubernetes.io/name:web tier:front] name:web-0 namespace:default] is not array or slice and cannot be filtered"),
  failed("{.items[1].spec.nothing[?(@.x)]}", "<nil> is not array or slice and cannot be filtered"),
  failed("{.items[0].status.phase[?(@.x)]}", "Running is not array or slice and cannot be filtered"),
  failed("{.items[?(@.spec.ratio<1)].metadata.name}", "incompatible types for comparison"),
  failed("{.items[?(@.metadata.name==1)].metadata.name}", "incompatible types for comparison"),
  failed("{.items[?(@.spec.replicas>@.spec.ratio)].metadata.name}", "incompatible types for comparison"),
  failed("{.items[?(@.spec.containers==1)].metadata.name}", "invalid type for comparison"),
  failed("{.items[?(@.spec.ready<true)].metadata.name}", "invalid type for comparison"),
  failed("{.items[?(@.spec.ports[*]==80)].metadata.name}", "can only compare one element at a time"),
  failed("{.items[?(@.spec.ports[3]==80)].metadata.name}", "array index out of bounds: index 3, length 2"),
  failed('{.items[?(@.metadata.name="web-0")].metadata.name}', "unrecognized filter operator ="),
  failed("{foo}", "unrecognized identifier foo"),
  failed("{.items[0].metadata['a b']}", "unrecognized identifier b"),
  failed("{end}", "not in range, nothing to end"),
  failed("{range .items[*]}{.metadata.name}{end}{end}", "not in range, nothing to end"),
  // Go's %q of the template: a tab is \t.
  ["é\t{end}", 'error executing jsonpath "é\\t{end}": Error executing template: not in range, nothing to end'],
]);

prints(
  "jsonpath-as-json: each result list as an indented JSON array",
  list,
  [
    ["{.items[*].metadata.name}", '[\n    "web-0",\n    "db-0",\n    "cache-0"\n]\n'],
    ["{.items[0].metadata.labels}", '[\n    {\n        "app.kubernetes.io/name": "web",\n        "tier": "front"\n    }\n]\n'],
    ["{.items[0].nope}", "[]\n"],
    ['x{.kind}{"\\n"}', '[\n    "x"\n]\n[\n    "List"\n]\n[\n    "\\n"\n]\n'],
    ["{range .items[*]}{.metadata.name}{end}", '[\n    "web-0"\n]\n[\n    "db-0"\n]\n[\n    "cache-0"\n]\n'],
    ["{.items[0].data}", '[\n    {\n        "a.b": "dotted",\n        "html": "\\u003cb\\u003e\\u0026\\u003c/b\\u003e"\n    }\n]\n'],
    [
      "{.items[0].spec.containers}",
      '[\n    [\n        {\n            "image": "nginx:1.27",\n            "name": "nginx"\n        },\n        {\n            "image": "busybox",\n            "name": "sidecar"\n        }\n    ]\n]\n',
    ],
    ["{.items[1].spec.nothing}{.items[2].spec.containers}", "[\n    null\n]\n[\n    []\n]\n"],
  ],
  true,
);
refuses("jsonpath-as-json: refusals", list, [["{.items[}", "error parsing jsonpath {.items[}, unterminated array"]], true);

/** One ConfigMap with the values that print differently in Go (the same stand-in server served it). */
const odd = {
  apiVersion: "v1",
  items: oddItems,
  kind: "List",
  metadata: { resourceVersion: "" },
};

prints("Go's printing of numbers, nulls, keys and strings", odd, [
  ["{.items[0].spec.floats[*]}", "1.2345675e+06 1e+21 1e+20 0.0001 0.00012 123456.7 1e-07 2.5e-10 -3.25"],
  ["{.items[0].spec.floats}", "[1234567.5,1e+21,100000000000000000000,0.0001,0.00012,123456.7,1e-7,2.5e-10,-3.25]"],
  ["{.items[0].spec.floats[?(@>1000000.0)]}", "1.2345675e+06 1e+21 1e+20"],
  ["{.items[0].spec.floats[?(@<0.001)]}", "0.0001 0.00012 1e-07 2.5e-10 -3.25"],
  ["{.items[0].spec.list[*]}", '1 null x {"k":null} []'],
  ["{.items[0].spec.list[?(@)]}", '1 null x {"k":null} []'],
  // Ranging over a null gives Go's invalid value, which prints <no value>.
  ["{range .items[0].spec.list[*]}{@},{end}", '1,<no value>,x,{"k":null},[],'],
  ["{.items[0].spec.list}", '[1,null,"x",{"k":null},[]]'],
  ["{.items[0].spec.keys}", '{"10":"a","9":"b","a":2,"b":1}'],
  [
    "{.items[0].spec.uni}|{.items[0].spec.ctl}|{.items[0].spec}",
    'é😀\u2028<|a\u0001b\b\f\r\n\t"\\|{"cr":"a\\rb","ctl":"a\\u0001b\\b\\f\\r\\n\\t\\"\\\\","esc":"\\u001b[31mred","floats":[1234567.5,1e+21,100000000000000000000,0.0001,0.00012,123456.7,1e-7,2.5e-10,-3.25],"keys":{"10":"a","9":"b","a":2,"b":1},"list":[1,null,"x",{"k":null},[]],"nl":"l1\\nl2","tab":"a\\tb","uni":"é😀\\u2028\\u003c"}',
  ],
]);
prints(
  "jsonpath-as-json: Go's printing",
  odd,
  [
    ["{.items[0].spec.list[*]}", '[\n    1,\n    null,\n    "x",\n    {\n        "k": null\n    },\n    []\n]\n'],
    ["{.items[0].spec.uni}", '[\n    "é😀\\u2028\\u003c"\n]\n'],
  ],
  true,
);
refuses("comparisons across types", odd, [
  failed('{.items[0].spec.list[?(@=="x")]}', "incompatible types for comparison"),
  failed("{.items[0].spec.keys[?(@.a)]}", "map[10:a 9:b a:2 b:1] is not array or slice and cannot be filtered"),
]);

/** kubectl create configmap web --from-literal=mode=fast --from-literal=app.name=web --dry-run=client -o json (no server needed). */
const configMap = { kind: "ConfigMap", apiVersion: "v1", metadata: { name: "web", creationTimestamp: null }, data: { "app.name": "web", mode: "fast" } };

prints("kubectl create configmap --dry-run=client -o jsonpath=TEMPLATE", configMap, [
  ['{.data.mode}{"\\n"}', "fast\n"],
  ["{.metadata}", '{"creationTimestamp":null,"name":"web"}'],
  ["{.data}", '{"app.name":"web","mode":"fast"}'],
  ["{.data.app\\.name}", "web"],
  ["{.data['app.name']}", ""],
  ["{.metadata.creationTimestamp}", "null"],
  ["{..mode}", "fast"],
]);

describe("the engine on its own, as custom-columns uses it", () => {
  test("findResults gives a list per node, with client-go's bare messages", () => {
    assert.deepEqual(compileJsonPath("{.items[*].metadata.name}x").findResults(list), [["web-0", "db-0", "cache-0"], ["x"]]);
    assert.equal(thrown(() => compileJsonPath("{.items[5]}").findResults(list)).message, "array index out of bounds: index 5, length 3");
    assert.equal(thrown(() => compileJsonPath("{.items[")).message, "unterminated array");
  });
});
