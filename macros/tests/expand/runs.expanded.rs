/// A layer norm over the last dim, for any batch dims in front: a `*B` run.
///
///# Contract
///
///```text
///x: float[*B, D]
///weight: float[D]
///return: float[*B, D]
///```
fn layer_norm(x: &Tensor, weight: &Tensor) -> Result<Tensor> {
    let __cc_spec: &'static ::candle_contracts::__private::ContractSpec = {
        static __CC_SPEC: ::candle_contracts::__private::ContractSpec = ::candle_contracts::__private::ContractSpec {
            function: "layer_norm",
            params: &["x", "weight"],
            file: ::core::file!(),
            line: ::core::line!(),
            column: ::core::column!(),
            dims: &["D"],
            values: &[],
            runs: &["B"],
            inputs: &[
                ::candle_contracts::__private::ClauseSpec {
                    subject: ::candle_contracts::__private::Subject::Argument("x"),
                    optional: false,
                    dtypes: ::candle_contracts::__private::DTypeSet::FLOAT,
                    dtypes_span: ::candle_contracts::__private::TextSpan::new(3, 8),
                    shape: &[
                        ::candle_contracts::__private::DimSpec::Run(0u16),
                        ::candle_contracts::__private::DimSpec::Named(0u16),
                    ],
                    shape_span: ::candle_contracts::__private::TextSpan::new(8, 15),
                    values: ::core::option::Option::None,
                    contiguous: false,
                    note: ::core::option::Option::None,
                    sequence: ::core::option::Option::None,
                    mask: ::core::option::Option::None,
                },
                ::candle_contracts::__private::ClauseSpec {
                    subject: ::candle_contracts::__private::Subject::Argument("weight"),
                    optional: false,
                    dtypes: ::candle_contracts::__private::DTypeSet::FLOAT,
                    dtypes_span: ::candle_contracts::__private::TextSpan::new(24, 29),
                    shape: &[::candle_contracts::__private::DimSpec::Named(0u16)],
                    shape_span: ::candle_contracts::__private::TextSpan::new(29, 32),
                    values: ::core::option::Option::None,
                    contiguous: false,
                    note: ::core::option::Option::None,
                    sequence: ::core::option::Option::None,
                    mask: ::core::option::Option::None,
                },
            ],
            outputs: &[
                ::candle_contracts::__private::ClauseSpec {
                    subject: ::candle_contracts::__private::Subject::Return,
                    optional: false,
                    dtypes: ::candle_contracts::__private::DTypeSet::FLOAT,
                    dtypes_span: ::candle_contracts::__private::TextSpan::new(41, 46),
                    shape: &[
                        ::candle_contracts::__private::DimSpec::Run(0u16),
                        ::candle_contracts::__private::DimSpec::Named(0u16),
                    ],
                    shape_span: ::candle_contracts::__private::TextSpan::new(46, 53),
                    values: ::core::option::Option::None,
                    contiguous: false,
                    note: ::core::option::Option::None,
                    sequence: ::core::option::Option::None,
                    mask: ::core::option::Option::None,
                },
            ],
            relations: &[],
            same_device: true,
            text: "x: float[*B, D]\nweight: float[D]\nreturn: float[*B, D]",
        };
        &__CC_SPEC
    };
    let mut __cc_guard = ::candle_contracts::__private::Guard::<
        1usize,
        1usize,
        0usize,
        0usize,
    >::new(__cc_spec);
    let __cc_guard_in = &mut __cc_guard;
    let __cc_output = ::candle_contracts::__private::run_body(move || -> Result<Tensor> {
        if let ::core::result::Result::Err(__cc_error) = __cc_guard_in
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
                let __cc_constants: [::candle_contracts::__private::ConstantProbe; 1usize] = [
                    |__cc_v: ::core::primitive::u64| -> ::core::primitive::bool {
                        let mut __cc_s = 0;
                        match ::core::convert::TryFrom::try_from(__cc_v) {
                            ::core::result::Result::Ok(__cc_x) => __cc_s = __cc_x,
                            ::core::result::Result::Err(_) => return false,
                        }
                        match __cc_s {
                            D => true,
                            _ => false,
                        }
                    },
                ];
                __cc_inputs
                    .check(
                        &[
                            ::candle_contracts::__private::one(&x),
                            ::candle_contracts::__private::one(&weight),
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
        { candle_nn::ops::rms_norm(x, weight, 1e-5) }
    });
    if let ::core::result::Result::Err(__cc_error) = __cc_guard
        .check_output(|| match &__cc_output {
            ::core::result::Result::Ok(__cc_ok) => {
                [::candle_contracts::__private::one(&(*__cc_ok))]
            }
            ::core::result::Result::Err(_) => {
                ::core::array::from_fn::<
                    _,
                    1usize,
                    _,
                >(|_| ::candle_contracts::__private::ClauseArg::One(
                    ::core::option::Option::None,
                ))
            }
        })
    {
        return ::core::result::Result::Err(
            ::candle_contracts::__private::into_error(__cc_error),
        );
    }
    __cc_output
}
