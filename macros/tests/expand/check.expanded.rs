/// One training step: the batch is checked where it is read, with `check!`.
fn step(images: &Tensor, labels: &Tensor) -> Result<()> {
    let checked = {
        let __cc_spec: &'static ::candle_contracts::__private::ContractSpec = {
            static __CC_SPEC: ::candle_contracts::__private::ContractSpec = ::candle_contracts::__private::ContractSpec {
                function: "check!",
                params: &[],
                file: ::core::file!(),
                line: ::core::line!(),
                column: ::core::column!(),
                dims: &["B"],
                values: &[],
                runs: &[],
                inputs: &[
                    ::candle_contracts::__private::ClauseSpec {
                        subject: ::candle_contracts::__private::Subject::Variable(
                            "images",
                        ),
                        optional: false,
                        dtypes: ::candle_contracts::__private::DTypeSet::F32,
                        dtypes_span: ::candle_contracts::__private::TextSpan::new(8, 11),
                        shape: &[
                            ::candle_contracts::__private::DimSpec::Named(0u16),
                            ::candle_contracts::__private::DimSpec::Fixed(784usize),
                        ],
                        shape_span: ::candle_contracts::__private::TextSpan::new(11, 19),
                        values: ::core::option::Option::Some(
                            &::candle_contracts::__private::ValueSpec {
                                ranges: &[],
                                ranges_span: ::candle_contracts::__private::TextSpan::new(
                                    0,
                                    0,
                                ),
                                ignore: &[],
                                ignore_span: ::candle_contracts::__private::TextSpan::new(
                                    0,
                                    0,
                                ),
                                allow_all_ignored: ::candle_contracts::__private::AllowAll::No,
                                finite: true,
                                integral: false,
                            },
                        ),
                        contiguous: false,
                        note: ::core::option::Option::None,
                        sequence: ::core::option::Option::None,
                        mask: ::core::option::Option::None,
                    },
                    ::candle_contracts::__private::ClauseSpec {
                        subject: ::candle_contracts::__private::Subject::Variable(
                            "labels",
                        ),
                        optional: false,
                        dtypes: ::candle_contracts::__private::DTypeSet::U32,
                        dtypes_span: ::candle_contracts::__private::TextSpan::new(
                            35,
                            38,
                        ),
                        shape: &[::candle_contracts::__private::DimSpec::Named(0u16)],
                        shape_span: ::candle_contracts::__private::TextSpan::new(38, 41),
                        values: ::core::option::Option::Some(
                            &::candle_contracts::__private::ValueSpec {
                                ranges: &[
                                    ::candle_contracts::__private::RangeSpec {
                                        lo: ::core::option::Option::Some(
                                            ::candle_contracts::__private::BoundSpec::Int(0i128),
                                        ),
                                        hi: ::core::option::Option::Some(
                                            ::candle_contracts::__private::BoundSpec::Int(10i128),
                                        ),
                                        inclusive: false,
                                    },
                                ],
                                ranges_span: ::candle_contracts::__private::TextSpan::new(
                                    45,
                                    50,
                                ),
                                ignore: &[],
                                ignore_span: ::candle_contracts::__private::TextSpan::new(
                                    0,
                                    0,
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
                text: "images: f32[B, 784] finite\nlabels: u32[B] in 0..10",
            };
            &__CC_SPEC
        };
        ::candle_contracts::__private::Guard::<
            1usize,
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
                let __cc_constants: [::candle_contracts::__private::ConstantProbe; 1usize] = [
                    |__cc_v: ::core::primitive::u64| -> ::core::primitive::bool {
                        let mut __cc_s = 0;
                        match ::core::convert::TryFrom::try_from(__cc_v) {
                            ::core::result::Result::Ok(__cc_x) => __cc_s = __cc_x,
                            ::core::result::Result::Err(_) => return false,
                        }
                        match __cc_s {
                            B => true,
                            _ => false,
                        }
                    },
                ];
                __cc_inputs
                    .check(
                        &[
                            ::candle_contracts::__private::one(&images),
                            ::candle_contracts::__private::one(&labels),
                        ],
                        &__cc_constants,
                        [],
                        || [],
                    )
            })
    };
    checked?;
    Ok(())
}
