/// The cross-entropy loss.
///
///# Contract
///
///```text
///logits: float[N, C]
///target: u8 | u32 | i64 [N] in 0..C ignore -100
///```
fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    let __cc_mode = ::candle_contracts::__private::mode();
    let __cc_bounds: [::candle_contracts::__private::BoundValue; 0usize] = [];
    let __cc_values: [::candle_contracts::__private::BoundValue; 0usize] = [];
    static __CC_SPEC: ::candle_contracts::__private::ContractSpec = ::candle_contracts::__private::ContractSpec {
        function: "loss",
        file: ::core::file!(),
        line: ::core::line!(),
        column: ::core::column!(),
        dims: &["N", "C"],
        values: &[],
        runs: &[],
        inputs: &[
            ::candle_contracts::__private::ClauseSpec {
                subject: ::candle_contracts::__private::SubjectSpec::Argument("logits"),
                dtypes: ::candle_contracts::__private::DTypeSet::FLOAT,
                dtypes_text: "float",
                shape: &[
                    ::candle_contracts::__private::DimSpec::Named(0u16),
                    ::candle_contracts::__private::DimSpec::Named(1u16),
                ],
                shape_text: "[N, C]",
                values: ::core::option::Option::None,
                contiguous: false,
                note: ::core::option::Option::None,
                sequence: ::core::option::Option::None,
            },
            ::candle_contracts::__private::ClauseSpec {
                subject: ::candle_contracts::__private::SubjectSpec::Argument("target"),
                dtypes: ::candle_contracts::__private::DTypeSet::U8
                    .or(::candle_contracts::__private::DTypeSet::U32)
                    .or(::candle_contracts::__private::DTypeSet::I64),
                dtypes_text: "u8 | u32 | i64",
                shape: &[::candle_contracts::__private::DimSpec::Named(0u16)],
                shape_text: "[N]",
                values: ::core::option::Option::Some(
                    &::candle_contracts::__private::ValueSpec {
                        ranges: &[
                            ::candle_contracts::__private::RangeSpec {
                                lo: ::core::option::Option::Some(
                                    ::candle_contracts::__private::BoundSpec::Int(0i128),
                                ),
                                hi: ::core::option::Option::Some(
                                    ::candle_contracts::__private::BoundSpec::Dim(1u16),
                                ),
                                inclusive: false,
                            },
                        ],
                        ranges_text: "0..C",
                        ignore: &[
                            ::candle_contracts::__private::IgnoreSpec::Int(-100i128),
                        ],
                        ignore_text: "-100",
                        allow_all_ignored: ::candle_contracts::__private::AllowAll::No,
                        finite: false,
                    },
                ),
                contiguous: false,
                note: ::core::option::Option::None,
                sequence: ::core::option::Option::None,
            },
        ],
        outputs: &[],
        relations: &[],
        same_device: true,
    };
    if __cc_mode != ::candle_contracts::__private::Mode::Off {
        let mut __cc_state = ::candle_contracts::__private::CallState::<
            2usize,
            0usize,
        >::new();
        #[allow(
            non_snake_case,
            non_upper_case_globals,
            unreachable_patterns,
            unused_variables,
            unused_assignments,
            clippy::all,
            clippy::pedantic
        )]
        let __cc_constants: [::candle_contracts::__private::ConstantProbe; 2usize] = [
            |__cc_v: ::core::primitive::u64| -> ::core::primitive::bool {
                let mut __cc_s = 0;
                match ::core::convert::TryFrom::try_from(__cc_v) {
                    ::core::result::Result::Ok(__cc_x) => __cc_s = __cc_x,
                    ::core::result::Result::Err(_) => return false,
                }
                match __cc_s {
                    N => true,
                    _ => false,
                }
            },
            |__cc_v: ::core::primitive::u64| -> ::core::primitive::bool {
                let mut __cc_s = 0;
                match ::core::convert::TryFrom::try_from(__cc_v) {
                    ::core::result::Result::Ok(__cc_x) => __cc_s = __cc_x,
                    ::core::result::Result::Err(_) => return false,
                }
                match __cc_s {
                    C => true,
                    _ => false,
                }
            },
        ];
        if let ::core::result::Result::Err(__cc_error) = ::candle_contracts::__private::check_inputs(
            &__CC_SPEC,
            __cc_mode,
            &[
                ::candle_contracts::__private::one(&logits),
                ::candle_contracts::__private::one(&target),
            ],
            &__cc_bounds,
            &__cc_values,
            &__cc_constants,
            __cc_state.bindings(),
        ) {
            return ::core::result::Result::Err(
                ::candle_contracts::__private::into_error(__cc_error),
            );
        }
    }
    candle_nn::loss::cross_entropy(logits, target)
}
