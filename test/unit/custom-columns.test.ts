// -o custom-columns=SPEC against kubectl v1.32.4 itself: every expected table and message below
// is what `kubectl get configmaps -o 'custom-columns=SPEC'` printed (messages without their
// `error: `), against a stand-in API server on 127.0.0.1 that served these objects as a
// ConfigMapList (kubectl get needs a server to read from; the table is its own printer's, one row
// per item). kubectl's create and label commands do not take -o custom-columns, so no command
// without a server could give these.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseCustomColumns } from "../../src/output/custom-columns";
import { items, oddItems } from "../fixtures/kubectl-objects";
import { thrown } from "../fixtures/template-error";

const odd = oddItems;

type Case = readonly [spec: string, lines: readonly string[]];
const text = (lines: readonly string[]): string => lines.map((l) => `${l}\n`).join("");

function renders(title: string, rows: readonly unknown[], cases: readonly Case[]): void {
  describe(title, () => {
    for (const [spec, lines] of cases) test(spec, () => assert.equal(parseCustomColumns(spec).render(rows), text(lines)));
  });
}

renders("columns as kubectl lays them out", items, [
  ["NAME:.metadata.name,PHASE:.status.phase,REPLICAS:.spec.replicas", ["NAME      PHASE     REPLICAS", "web-0     Running   3", "db-0      Pending   1", "cache-0   Running   10"]],
  // A column is at least 6 wide, and 3 wider than its widest cell; the last one is not padded.
  [
    "A-VERY-LONG-HEADER-NAME:.metadata.name,B:.kind",
    ["A-VERY-LONG-HEADER-NAME   B", "web-0                     ConfigMap", "db-0                      ConfigMap", "cache-0                   ConfigMap"],
  ],
  [":.metadata.name,:.kind", ["          ", "web-0     ConfigMap", "db-0      ConfigMap", "cache-0   ConfigMap"]],
  ["NAME:.metadata.name,N:.spec.replicas,NAME:.metadata.name", ["NAME      N     NAME", "web-0     3     web-0", "db-0      1     db-0", "cache-0   10    cache-0"]],
  // The four ways of writing a column's path, and a recursive one.
  [
    "A:metadata.name,B:.metadata.name,C:{metadata.name},D:{.metadata.name},E:..phase",
    [
      "A         B         C         D         E",
      "web-0     web-0     web-0     web-0     Running",
      "db-0      db-0      db-0      db-0      Pending",
      "cache-0   cache-0   cache-0   cache-0   Running",
    ],
  ],
  // Several values are joined with commas; maps and lists print as Go's fmt does; nothing found is <none>.
  [
    "NAME:metadata.name,IMAGES:.spec.containers[*].image,PORTS:{.spec.ports},LABELS:{metadata.labels}",
    [
      "NAME      IMAGES               PORTS      LABELS",
      "web-0     nginx:1.27,busybox   [80 443]   map[app.kubernetes.io/name:web tier:front]",
      "db-0      postgres:16          [5432]     map[app.kubernetes.io/name:db]",
      "cache-0   <none>               <none>     <none>",
    ],
  ],
  ["NAME:..name", ["NAME", "web-0,nginx,sidecar", "db-0,postgres", "cache-0"]],
  [
    "NAME:.metadata.name,APP:.metadata.labels.app\\.kubernetes\\.io/name,TIER:.metadata.labels['tier']",
    ["NAME      APP      TIER", "web-0     web      front", "db-0      db       <none>", "cache-0   <none>   <none>"],
  ],
  // A null is Go's <nil>, a missing key <none>.
  [
    'NAME:.metadata.name,C:.spec.containers[?(@.name=="nginx")].image,R:.spec.ratio,OK:.spec.ready,N:.spec.nothing',
    [
      "NAME      C            R        OK       N",
      "web-0     nginx:1.27   1.5      true     <none>",
      "db-0      <none>       0.25     false    <nil>",
      "cache-0   <none>       <none>   <none>   <none>",
    ],
  ],
  [
    "NAME:.metadata.name,EMPTY:,X:.spec.containers",
    [
      "NAME      EMPTY    X",
      "web-0     <none>   [map[image:nginx:1.27 name:nginx] map[image:busybox name:sidecar]]",
      "db-0      <none>   [map[image:postgres:16 name:postgres]]",
      "cache-0   <none>   []",
    ],
  ],
  ["NAME:.metadata.name,X:.foo,Y:.spec.end", ["NAME      X        Y", "web-0     <none>   <none>", "db-0      <none>   <none>", "cache-0   <none>   <none>"]],
  // .spec.ratio<1 is a field named "ratio<1"; a filter that keeps nothing is <none>.
  ["NAME:.metadata.name,X:.spec.ratio<1", ["NAME      X", "web-0     <none>", "db-0      <none>", "cache-0   <none>"]],
  ["NAME:.metadata.name,X:.spec.ports[?(@<1)]", ["NAME      X", "web-0     <none>", "db-0      <none>", "cache-0   <none>"]],
  ["NAME:.metadata.name,X:.a:b", ["NAME      X", "web-0     <none>", "db-0      <none>", "cache-0   <none>"]],
]);

// kubectl get configmaps web-0 -o custom-columns=...; and get on an empty list prints the header alone.
renders("one object", [items[0]], [["NAME:.metadata.name,KIND:.kind", ["NAME    KIND", "web-0   ConfigMap"]]]);
renders("no objects", [], [["NAME:.metadata.name,X:.kind", ["NAME   X"]]]);

renders("Go's printing, and values that break the table", odd, [
  [
    "F:.spec.floats,L:.spec.list,U:.spec.uni,K:.spec.keys",
    [
      "F                                                                         L                             U      K",
      "[1.2345675e+06 1e+21 1e+20 0.0001 0.00012 123456.7 1e-07 2.5e-10 -3.25]   [1 <nil> x map[k:<nil>] []]   é😀\u2028<   map[10:a 9:b a:2 b:1]",
    ],
  ],
  [
    "F:.spec.floats[*],L:.spec.list[*]",
    ["F                                                                       L", "1.2345675e+06,1e+21,1e+20,0.0001,0.00012,123456.7,1e-07,2.5e-10,-3.25   1,<nil>,x,map[k:<nil>],[]"],
  ],
  // kubectl escapes CR and ESC in values, and nothing else: a tab starts another cell, a newline another line.
  ["C:.spec.cr,E:.spec.esc,X:{.metadata.name}", ["C      E           X", "a\\rb   ^[[31mred   f"]],
  ["T:.spec.tab,X:metadata.name", ["T     X", "a     b     f"]],
  ["N:.spec.nl", ["N", "l1", "l2"]],
  // A line of one cell ends the tabwriter's block; the widths before it stay (RememberWidths).
  ["N:.spec.nl,X:metadata.name,Y:metadata.name", ["N     X     Y", "l1", "l2    f     f"]],
  ["N:.spec.nl,LONG-HEADER-X:.metadata.name,Y:.metadata.name", ["N     LONG-HEADER-X   Y", "l1", "l2    f               f"]],
  [
    "S:.spec",
    [
      "S",
      "map[cr:a\\rb ctl:a\u0001b\b",
      "\\r",
      '           "\\ esc:^[[31mred floats:[1.2345675e+06 1e+21 1e+20 0.0001 0.00012 123456.7 1e-07 2.5e-10 -3.25] keys:map[10:a 9:b a:2 b:1] list:[1 <nil> x map[k:<nil>] []] nl:l1',
      "l2 tab:a   b uni:é😀\u2028<]",
    ],
  ],
]);

// A form feed in a value ends the line and lays out all before it: the lines after it do not widen the columns above.
renders(
  "a form feed",
  [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "web" }, v: "x\fa-very-very-long-value" }],
  [["N:.metadata.name,V:.v,M:.metadata.name", ["N     V     M", "web   x", "a-very-very-long-value   web"]]],
);

describe("specs kubectl refuses", () => {
  const path = "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'";
  const cases: readonly (readonly [spec: string, message: string])[] = [
    ["", "custom-columns format specified but no custom columns given"],
    ["NAME", "unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>"],
    ["NAME:.metadata.name,BAD", "unexpected custom-columns spec: BAD, expected <header>:<json-path-expr>"],
    // The spec is split on every comma, quotes or not.
    ["NAME:.metadata.name,X:.metadata.labels['a,b']", "unexpected custom-columns spec: b'], expected <header>:<json-path-expr>"],
    ["NAME:.metadata.name,X:{.a}{.b}", path],
    ["NAME:.metadata.name,X:{{.a}}", path],
    ["NAME:.metadata.name,X:.spec.ports[*]}", path],
    // kubectl prints the header line first (it parses the columns' paths only when it prints); here nothing is printed.
    ["NAME:.metadata.name,X:.items[", "unterminated array"],
  ];
  for (const [spec, message] of cases) test(spec, () => assert.equal(thrown(() => parseCustomColumns(spec)).message, message));
});

describe("a path that fails on an object: kubectl's message, and the rows it printed before", () => {
  const cases: readonly (readonly [spec: string, message: string, printed: readonly string[]])[] = [
    ['NAME:.metadata.name,RUNNING:.status[?(@.phase=="Running")]', "map[phase:Running] is not array or slice and cannot be filtered", ["NAME   RUNNING"]],
    ["NAME:.metadata.name,X:.spec.ports[5]", "array index out of bounds: index 5, length 2", ["NAME   X"]],
    ["NAME:.metadata.name,X:.spec.containers[0].name,Y:.spec.ports[-1]", "array index out of bounds: index 0, length 0", ["NAME    X          Y", "web-0   nginx      443", "db-0    postgres   5432"]],
  ];
  for (const [spec, message, printed] of cases) {
    test(spec, () => {
      const columns = parseCustomColumns(spec);
      const err = thrown(() => columns.render(items));
      assert.equal(err.message, message);
      assert.equal(err.output, text(printed));
    });
  }
});

test("each column's path as kubectl completes it", () => {
  const columns = parseCustomColumns("A:metadata.name,B:.metadata.name,C:{metadata.name},D:{.metadata.name},E:..name,F:").columns;
  assert.deepEqual(
    columns.map((c) => [c.header, c.fieldSpec]),
    [
      ["A", "{.metadata.name}"],
      ["B", "{.metadata.name}"],
      ["C", "{.metadata.name}"],
      ["D", "{.metadata.name}"],
      ["E", "{..name}"],
      ["F", ""],
    ],
  );
});
