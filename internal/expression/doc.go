// Copyright 2026 The KubeStellar Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

// Package expression compiles and evaluates the CEL expressions of a
// StagedBindingPolicy stage.
//
// A stage can carry two optional expressions, distinguished by [Kind]:
//
//   - A filter ([KindFilter]) is evaluated once per workload-object clause of a
//     KubeStellar Binding. Its only variable is downsyncClause, whose fields
//     are the JSON field names of a downsync clause: group, version, resource,
//     namespace (the empty string for cluster-scoped objects), name,
//     resourceVersion, createOnly, statusCollectors (a list of string),
//     wantSingletonReportedState and wantMultiWECReportedState. All fields are
//     always present and statically typed, so a typo in a field name or a
//     non-boolean result is reported by [Engine.Compile]. Example:
//
//     downsyncClause.resource == "deployments"
//
//   - A condition ([KindCondition]) is evaluated against the JSON form of one
//     KubeStellar CombinedStatus (including apiVersion, kind and metadata). The
//     value is available under two names, obj and combinedStatus, both of type
//     map(string, dyn). Example:
//
//     obj.results.exists(r, r.name == 'deployments-aggregator' &&
//     r.rows.exists(row, row.columns.exists(col,
//     col.type == 'Number' && col.float == '1')))
//
//     Accessing a key that is absent is an evaluation error. To make the common
//     case of a CombinedStatus without any results yet evaluate to false rather
//     than fail, the list fields that the JSON form omits when empty (results,
//     and in every result columnNames, rows, rowErrors and aggregationErrors,
//     and in every row columns) are always present, possibly as empty lists.
//     The members of a column value (string, float, bool, object, array) are
//     present only when set, exactly as in JSON; note that a Number is held in
//     the member float as a string.
//
// Both kinds of expression must produce a bool. Besides the standard CEL
// library, expressions may use the cel-go extension libraries for strings
// (ext.Strings, e.g. lowerAscii, split, indexOf), lists (ext.Lists, e.g.
// flatten, distinct, sort, lists.range), math (ext.Math, e.g. math.greatest,
// math.abs) and sets (ext.Sets, e.g. sets.contains, sets.intersects), and
// optional values (cel.OptionalTypes, e.g. obj.?metadata.?labels.?app). Numeric
// values of different types (int, uint, double) may be compared with each other
// (cel.CrossTypeNumericComparisons), which matters because JSON integers and
// floating-point numbers are both plain numbers.
//
// An [Engine] compiles each distinct (kind, source) pair once and keeps the
// resulting [Program] in a bounded LRU cache. Engines and programs are safe for
// concurrent use. Every failure is reported as an [*Error] that names the
// kind, the expression and an [ErrorReason].
//
// What an expression may cost is bounded four ways, and
// [ErrorReason.TooCostly] tells these failures apart from the others:
//
//   - [Engine.Compile] estimates the worst-case cost of the expression, with
//     string and list functions charged by size and the input taken to be as
//     large as [MaxObjectSize], and rejects it with
//     [ReasonEstimatedCostTooHigh] above the estimated cost limit
//     ([WithEstimatedCostLimit]);
//   - every evaluation is stopped with [ReasonCostLimitExceeded] once its
//     runtime cost exceeds the cost limit ([WithCostLimit]); string functions
//     are charged by the bytes they read and build, list concatenation by the
//     length of the list built, and replace, join and lists.range refuse to
//     build a result larger than the cost limit pays for (ten bytes or one
//     element per unit) before allocating it, and matches refuses a match
//     whose string length times compiled pattern size is more than the cost
//     limit pays for (see regex.go) before running it; ==, != and in are
//     charged the deep weight of their lighter operand, and format and
//     flatten refused above what the limit pays for, before they run
//     (deepcharge.go); a call dispatched at run time is charged as the
//     overload it runs (dispatch.go). A condition whose cost the
//     sizes of its CombinedStatus bound within the limit runs without cost
//     tracking (see costBound in bound.go);
//   - every evaluation is stopped with [ReasonTimeout] after the evaluation
//     timeout ([WithEvalTimeout]);
//   - evaluations made through one [Budget] ([Engine.NewBudget]), such as
//     those of one reconcile, stop with [ReasonBudgetExhausted] once they
//     have spent its cost or time together ([WithBudget]); an evaluation
//     without cost tracking is charged its bound.
//
// The timeouts and the budget's time are kept by the wall clock on purpose:
// they bound the CPU an expression takes, which a fake or paused clock must
// not lift. Everything the reconciler decides or records reads its own clock.
package expression
