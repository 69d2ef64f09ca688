/// The cross-entropy loss.
///
///# Contract
///
///```text
///logits: float[N, C]
///target: u8 | u32 | i64 [N] in 0..C ignore -100
///```
fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    let __cc_spec: &'static ::candle_contracts::__private::ContractSpec = {
        static __CC_SPEC: ::candle_contracts::__private::ContractSpec = ::candle_contracts::__private::ContractSpec {
            function: "loss",
            params: &["logits", "target"],
            file: ::core::file!(),
            line: ::core::line!(),
            column: ::core::column!(),
            dims: &["N", "C"],
            values: &[],
            runs: &[],
            inputs: &[
                ::candle_contracts::__private::ClauseSpec {
                    subject: ::candle_contracts::__private::Subject::Argument("logits"),
                    optional: false,
                    dtypes: ::candle_contracts::__private::DTypeSet::FLOAT,
                    dtypes_span: ::candle_contracts::__private::TextSpan::new(8, 13),
                    shape: &[
                        ::candle_contracts::__private::DimSpec::Named(0u16),
                        ::candle_contracts::__private::DimSpec::Named(1u16),
                    ],
                    shape_span: ::candle_contracts::__private::TextSpan::new(13, 19),
                    values: ::core::option::Option::None,
                    contiguous: false,
                    note: ::core::option::Option::None,
                    sequence: ::core::option::Option::None,
                    mask: ::core::option::Option::None,
                },
                ::candle_contracts::__private::ClauseSpec {
                    subject: ::candle_contracts::__private::Subject::Argument("target"),
                    optional: false,
                    dtypes: ::candle_contracts::__private::DTypeSet::U8
                        .or(::candle_contracts::__private::DTypeSet::U32)
                        .or(::candle_contracts::__private::DTypeSet::I64),
                    dtypes_span: ::candle_contracts::__private::TextSpan::new(28, 42),
                    shape: &[::candle_contracts::__private::DimSpec::Named(0u16)],
                    shape_span: ::candle_contracts::__private::TextSpan::new(43, 46),
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
                            ranges_span: ::candle_contracts::__private::TextSpan::new(
                                50,
                                54,
                            ),
                            ignore: &[
                                ::candle_contracts::__private::IgnoreSpec::Int(-100i128),
                            ],
                            ignore_span: ::candle_contracts::__private::TextSpan::new(
                                62,
                                66,
                            ),
                            allow_all_ignored: ::candle_contracts::__private::AllowAll::No,
                            finite: false,
                            integral: false,
                        },
                    ),
                    contiguous: false,
                    note: ::core::option::Option::None,
                    sequence: ::core::option::Option::None,
                    mask: ::core::option::Option::None,
                },
            ],
            outputs: &[],
            relations: &[],
            same_device: true,
            text: "logits: float[N, C]\ntarget: u8 | u32 | i64 [N] in 0..C ignore -100",
        };
        &__CC_SPEC
    };
    if let ::core::result::Result::Err(__cc_error) = ::candle_contracts::__private::Guard::<
        2usize,
        0usize,
        0usize,
        0usize,
    >::new(__cc_spec)
        .check_inputs(|__cc_inputs| {
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
            __cc_inputs
                .check(
                    &[
                        ::candle_contracts::__private::one(&logits),
                        ::candle_contracts::__private::one(&target),
                    ],
                    &__cc_constants,
                    [],
                    || [],
                )
        })
    {
        return ::core::result::Result::Err(
            ::candle_contracts::__private::into_error(__cc_error),
        );
    }
    { candle_nn::loss::cross_entropy(logits, target) }
}
