#!/usr/bin/env python3
"""Writes book/src/compile-errors.md from the trybuild suite in tests/ui: one section per
diagnostic, with its source as a `compile_fail` sample and rustc's output from the `.stderr`
snapshot. tests/tests/book.rs checks that the chapter and the suite agree; rerun this script
after re-blessing the snapshots."""
import pathlib

root = pathlib.Path(__file__).resolve().parent.parent
ui = root / "tests" / "ui"

# (file stem, title, why): in the order of the chapter.
SECTIONS = [
    ("unknown_dtype", "Unknown dtype", "Names are candle's dtype names in Rust spelling, or a family."),
    ("missing_shape", "Missing shape", "A tensor clause always has a shape; `[]` is a scalar and `[..]` any shape."),
    ("unknown_constraint", "Unknown rule after the shape", "After the shape come `in`, `ignore`, `finite`, `integral`, `contiguous`, `where` or a note string."),
    ("duplicate_constraint", "A rule given twice", "Join alternatives with `|` in one `in`."),
    ("unknown_parameter", "Unknown parameter", "A clause names a parameter of the function (or, in `check!`, a variable)."),
    ("not_a_tensor", "A clause on a number", "A number can bound a range, but has no dtype or shape to check."),
    ("clause_on_non_tensor_type", "A clause on a type that is not a tensor", "When the type is not plainly a number, rustc reports it, worded by the library."),
    ("duplicate_clause", "Two clauses for one argument", "Write all rules of an argument in one clause."),
    ("field_without_self", "A `self` path without a receiver", "`self.field` needs a method."),
    ("optional_step_on_non_option", "`?` on a value that is not an `Option`", "An optional step stands after a field or method whose value is an `Option`."),
    ("index_on_non_sequence", "`[i]` on a value that is not a sequence", "Indexing stands on a slice, array or `Vec`."),
    ("path_index_not_a_number", "A computed index in a path", "A path indexes with a literal, an integer parameter (`cache.kvs[block_idx]`) or `[..]`; check a computed element with `check!` in the body."),
    ("step_after_every_element", "`?` or `[i]` after `[..]`", "After `[..]` a path goes on with fields and methods; `None` elements are skipped already."),
    ("sequence_without_sequence_clause", "A sequence of tensors checked as one tensor", "A `&[Tensor]` or `Vec<Tensor>` takes a sequence clause: `[f32[E]; N]`."),
    ("sequence_without_count", "A sequence clause without its count", "`[spec; N]`: the count is a dim, a literal or `_`."),
    ("sequence_rules_outside", "Rules after a sequence clause", "The element's rules go inside the brackets."),
    ("tuple_index_missing", "`return.` without an index", "`return.0`, `return.1`, ... name the elements of a returned tuple."),
    ("return_and_tuple_elements", "`return` and `return.0` together", "A `return` clause checks a tensor; `return.0`, ... check the elements of a tuple."),
    ("return_element_of_a_tensor", "`return.0` on a function that returns a tensor", "`return.0`, `return.1`, ... name the elements of a returned tuple; a returned tensor takes `return`."),
    ("return_clause_without_return", "A `return` clause on a function returning nothing", ""),
    ("return_clause_on_boxed_future", "A `return` clause on a boxed future", "An `#[async_trait]` method returns a boxed future; the guard cannot see its value."),
    ("dim_only_in_expression", "A name in an expression that is neither a dim nor in scope", "A name used only inside expressions is a value from scope (a constant or a parameter); when there is none, rustc says so where the name stands. To bind a dim, write it plainly in some shape."),
    ("unknown_constant_in_relation", "A relation naming a constant that does not exist", "Relations compare dims with constants, parameters and braced expressions; rustc resolves the name."),
    ("static_in_shape", "A `static` as a dim", "A plain name in a shape is a dim, or a `const` compared by value; a `static` cannot be compared in a pattern, so write `{IMAGE_DIM}` for its value."),
    ("impl_const_generic_in_shape", "A const generic of the `impl` as a dim", "The contract sees the method's own const generics, not the `impl`'s; write `{K}` for its value."),
    ("dim_named_like_parameter", "A dim named like a parameter", "A name in a shape that is a parameter would be ambiguous; `{n}` is its value."),
    ("braced_dim_not_usize", "A braced dim that is not a `usize`", "A dim is one of candle's `usize` sizes; a signed value (which could be negative) or a string is refused by rustc, worded by the library."),
    ("reserved_dim_name", "A reserved word as a dim", "`in`, `ignore`, `finite`, `integral`, `contiguous`, `where`, `MAX`, `allow_all`, `return` and `self` are never dim names."),
    ("two_rest_dims", "Two `..` or `*name` in one shape", "The dims between them would be ambiguous."),
    ("division_by_zero", "Division by zero in a dim expression", ""),
    ("dim_expression_too_deep", "A dim expression nested too deeply", "The guard evaluates an expression on a stack of 16 values; each operator whose right operand is parenthesised needs one more. Nest to the left or compute a part in a braced value."),
    ("bound_only_after_body", "An input checked against a dim only the return value binds", "The guard runs before the body; bind the dim in an input."),
    ("bound_names_nothing", "A bound that names nothing", "A name in a bound is a dim of the contract, a parameter or a constant in scope; rustc reports a name that is none of these."),
    ("unbraced_bound_expression", "A path or an expression as a bound, without braces", "A bound is a literal, a name or a braced expression: `{f64::MAX}`, `{cfg.num_labels}`."),
    ("tensor_as_bound", "A tensor as a bound", "Bound by one of its dims instead."),
    ("max_in_range", "`MAX` in a range", "`MAX` is candle's skip sentinel and stands after `ignore`."),
    ("float_bound_on_integer", "A float bound on an integer clause", ""),
    ("float_bound_out_of_range", "A float bound beyond f64", "As rustc's `overflowing_literals`: the literal would round to infinity."),
    ("inexact_single_value", "A single float value no float holds", "Values are compared with the real number written, exactly: `0.1` is no f16, f32 or f64 value, so as a single value or an ignored value it would match nothing."),
    ("negative_on_unsigned", "A negative value on an unsigned clause", "It could never occur."),
    ("ignore_value_impossible", "An ignored value the dtype cannot hold", ""),
    ("max_on_float", "`MAX` on a float clause", "The sentinel exists for integer indices only."),
    ("finite_on_integer", "`finite` on an integer clause", "Integers are never NaN or infinite."),
    ("integral_on_integer", "`integral` on an integer clause", "Integers are always whole numbers."),
    ("where_without_value_rules", "`where` on a clause without value rules", "A mask exempts positions from the value rules (`in`, `ignore`, `finite`, `integral`); without them it has nothing to exempt."),
    ("where_unknown_mask", "A mask that names no parameter", "`where` takes a parameter or a braced expression."),
    ("where_on_return", "A mask on a `return` clause", "Masks are computed with the inputs, before the body."),
    ("derived_in_check", "A derived subject or a braced mask in `check!`", "Compute the tensor or the mask into a variable first, and name it."),
    ("empty_range", "An empty range", "`5..3` and `0..0` hold for no value."),
    ("unsatisfiable_range", "A range the dtype can never satisfy", ""),
    ("unknown_option", "Unknown option", "The options are `on_violation` and `same_device`."),
    ("relation_with_one_equals", "A dim set with one `=`", "A relation compares with `==`, `<=`, `<`, `>=` or `>`; `name = value` is an option."),
    ("bad_option_value", "Unknown option value", ""),
    ("static_option_value", "`static` is `true` or `false`", "`static = false` turns the compile-time reading of the body off."),
    ("on_violation_error_without_result", "`on_violation = error` without a `Result`", "Without a `Result` there is no `Err` to return."),
    ("error_type_without_from", "An error type that cannot carry a violation", "The function's error type needs `From<ContractError>`; rustc reports it at the return type."),
    ("missing_docs_kept", "`missing_docs` on an undocumented contracted function", "The contract's doc section goes only on a function that has docs already, so `missing_docs` still reports one that has none."),
    ("const_fn", "`#[contract]` on a `const fn`", "The guard reads tensors at run time."),
    ("trait_declaration", "`#[contract]` on a trait method without a body", "Put the contract on the method in the `impl`."),
    ("not_a_function", "`#[contract]` on something that is not a function", ""),
    ("else_misused", "`else P = 0` where no step may find `None`, or with another size", "`else P = 0` goes after a clause whose path has a `?` (`self.kv_cache?.0`) and names one of the clause's own dims; an absent cache holds nothing, so the size is 0."),
    ("not_swiglu_misused", "`!= Swiglu` on a free function, another variant, or a field that is no `Activation`", "`self.act_fn != Swiglu` states a candle-nn `Activation` field of `self`: `Swiglu` is the one variant that changes a shape."),
    ("field_flag_misused", "A flag on a free function, or on a field that is no `bool`", "`self.multi_query = true` states a `bool` field's value: it needs `self`, and a field of another type is rustc's type error at the clause."),
    ("struct_contract_unknown_field", "A struct contract on a name that is no field", "A struct contract states the struct's fields (`proj: Linear[E -> E]`) and the dims its integer fields are (`n_head = H`)."),
    ("struct_contract_impl_without_contract", "A method of a struct with a contract, outside a `#[contract] impl`", "The struct's clauses reach its methods through `#[contract]` on their `impl`, in the struct's file; a contracted method that did not take them would check less than the struct states, so it does not compile (rustc names the two probe types)."),
    ("check_return_clause", "`return` and `on_violation` in `check!`", "`check!` always returns `Result<(), ContractError>`."),
    ("all_errors_at_once", "Every error at once", "All errors of one attribute are reported in one compile."),
    ("static_rank_mismatch", "Body: a rank that certainly differs", "The body is read against the contract at compile time; `add` takes a tensor of the receiver's shape (`broadcast_add` broadcasts)."),
    ("static_literal_dim", "Body: two literal dims that differ", "`matmul` needs the receiver's last dim to be the argument's second to last."),
    ("static_symbolic_offset", "Body: `N` against `N + 1`", "Two dims whose difference is a nonzero constant differ for every size; two different names (`N`, `M`) may be equal, and are not reported."),
    ("static_dtype_set", "Body: dtypes with nothing in common", "The guarded ops' contracts are checked at their calls."),
    ("static_guarded_op", "Body: a guarded op's contract", "A column of class ids is not what `nn::cross_entropy` takes."),
    ("static_return_clause", "Body: the value returned against the `return` clause", ""),
    ("static_cross_method", "Body: a call of another contracted method", "`#[contract]` on the `impl` block makes its methods' contracts visible to each other."),
    ("static_followed_bindings", "Body: bindings followed in order", "A `mut` binding is known from its `let` until something the walk cannot follow may change it, and the parameter it shadows until then; a local does not hide a module path (`let loss = loss::nll(..)`); a clause on a parameter's field holds in the body."),
    ("static_first_mismatch", "Body: the first certain mismatch, where it is", "A value the macro cannot see (`v + self.eps`) stops nothing a candle op still tells: what `broadcast_div` gives has at least the rank of `xs`, so the `mul` is reported, not the `return` clause after it."),
    ("static_layer_weight", "Body: a layer's input against its weight", "candle-nn's layers have rules for `forward` and `apply`; with a clause on the weight (`self.proj.weight()`), the output is known and an input whose last dim is not the weight's is certain to fail."),
    ("static_constant_dims", "Body: a dim named by a constant", "A dim named after an integer `const` in sight is its value, as the guard binds it: `IMAGE_DIM` is 784."),
    ("static_file_use", "Body: a path through the file's own `use`", "The macro reads the `use`s of the module its function stands in from the source file: `use candle_contracts::nn;` makes `nn::cross_entropy` the guarded op, checked at its call."),
    ("static_without_clauses", "Body: `#[contract]` without clauses on a function", "The body is read at compile time and nothing is added to what runs; a candle `Tensor` parameter starts with nothing known, and what the body makes certain (a dtype set by `to_dtype`) is checked at the calls."),
    ("static_crate_module_stack", "Body: a stack of the crate's blocks, and facts", "`xs.apply(&block)` runs the crate's `impl Module for Block`, its contract checked at the call; a `for` loop whose body keeps `[B, T, E]` leaves `xs` known after it; a relation (`E >= 1`) decides what the sizes alone leave open."),
    ("static_issue_examples", "Body: every mismatch at once", "Every certain mismatch of a crate is reported in one compile, and the functions still expand."),
]

missing = {p.stem for p in ui.glob("*.rs")} - {s[0] for s in SECTIONS}
assert not missing, f"sections missing for {missing}"

out = [
    "# Compile-time errors",
    "",
    "The macro checks a contract against itself and against the function's signature when the",
    "crate compiles. Each mistake is an error pointing at the smallest token that is wrong, and",
    "every error of an attribute comes out in one compile; the function itself is left as written,",
    "so no error cascades into its callers. This chapter lists every diagnostic, each with a sample",
    "that fails to compile (a doctest) and the compiler's output, which the trybuild suite in",
    "`tests/ui` pins.",
    "",
]
# Cases whose error needs the macro to read the file it stands in, which a doctest does not have.
READS_ITS_FILE = {"static_file_use", "static_without_clauses", "static_layer_weight", "static_constant_dims"}

for stem, title, why in SECTIONS:
    source = (ui / f"{stem}.rs").read_text().rstrip("\n")
    stderr = (ui / f"{stem}.stderr").read_text().rstrip("\n")
    out.append(f"## {title}")
    out.append("")
    if why:
        out.append(why)
        out.append("")
    code = "E0277" if "error[E0277]" in stderr else None
    if stem in READS_ITS_FILE:
        # A doctest has no source file of its own for the macro to read: shown, not run here
        # (the trybuild case runs it).
        out.append("```rust,ignore")
    else:
        out.append("```rust,compile_fail" + (f",{code}" if code else ""))
    out.append(source)
    out.append("```")
    out.append("")
    out.append("```text")
    out.append(stderr)
    out.append("```")
    out.append("")
(root / "book" / "src" / "compile-errors.md").write_text("\n".join(out))
print(f"wrote {len(SECTIONS)} sections")
