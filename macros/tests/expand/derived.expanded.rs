/// Padding exempt under the attention mask, and rows that must be distributions.
///
///# Contract
///
///```text
///input_ids: i64[B, T] in 0..V where attention_mask
///attention_mask: u8[B, T]
///embeddings: f32[V, D]
///{self.weights.sum(1)?}: f32[V] in 0.999..=1.001 where {self.keep.ge(1u8)?}
///labels: f32[B] in 0.0..{self.classes as f64} integral
///```
fn embed(
    &self,
    input_ids: &Tensor,
    attention_mask: &Tensor,
    embeddings: &Tensor,
    labels: &Tensor,
) -> Result<Tensor> {
    let __cc_spec: &'static ::candle_contracts::__private::ContractSpec = {
        static __CC_SPEC: ::candle_contracts::__private::ContractSpec = ::candle_contracts::__private::ContractSpec {
            function: "embed",
            params: &["input_ids", "attention_mask", "embeddings", "labels"],
            file: ::core::file!(),
            line: ::core::line!(),
            column: ::core::column!(),
            dims: &["B", "T", "V", "D"],
            values: &[],
            runs: &[],
            inputs: &[
                ::candle_contracts::__private::ClauseSpec {
                    subject: ::candle_contracts::__private::Subject::Argument(
                        "input_ids",
                    ),
                    optional: false,
                    dtypes: ::candle_contracts::__private::DTypeSet::I64,
                    dtypes_span: ::candle_contracts::__private::TextSpan::new(11, 14),
                    shape: &[
                        ::candle_contracts::__private::DimSpec::Named(0u16),
                        ::candle_contracts::__private::DimSpec::Named(1u16),
                    ],
                    shape_span: ::candle_contracts::__private::TextSpan::new(14, 20),
                    values: ::core::option::Option::Some(
                        &::candle_contracts::__private::ValueSpec {
                            ranges: &[
                                ::candle_contracts::__private::RangeSpec {
                                    lo: ::core::option::Option::Some(
                                        ::candle_contracts::__private::BoundSpec::Int(0i128),
                                    ),
                                    hi: ::core::option::Option::Some(
                                        ::candle_contracts::__private::BoundSpec::Dim(2u16),
                                    ),
                                    inclusive: false,
                                },
                            ],
                            ranges_span: ::candle_contracts::__private::TextSpan::new(
                                24,
                                28,
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
                    mask: ::core::option::Option::Some(::candle_contracts::__private::MaskSpec {
                        index: 0u16,
                        text: ::candle_contracts::__private::TextSpan::new(35, 49),
                    }),
                },
                ::candle_contracts::__private::ClauseSpec {
                    subject: ::candle_contracts::__private::Subject::Argument(
                        "attention_mask",
                    ),
                    optional: false,
                    dtypes: ::candle_contracts::__private::DTypeSet::U8,
                    dtypes_span: ::candle_contracts::__private::TextSpan::new(66, 68),
                    shape: &[
                        ::candle_contracts::__private::DimSpec::Named(0u16),
                        ::candle_contracts::__private::DimSpec::Named(1u16),
                    ],
                    shape_span: ::candle_contracts::__private::TextSpan::new(68, 74),
                    values: ::core::option::Option::None,
                    contiguous: false,
                    note: ::core::option::Option::None,
                    sequence: ::core::option::Option::None,
                    mask: ::core::option::Option::None,
                },
                ::candle_contracts::__private::ClauseSpec {
                    subject: ::candle_contracts::__private::Subject::Argument(
                        "embeddings",
                    ),
                    optional: false,
                    dtypes: ::candle_contracts::__private::DTypeSet::F32,
                    dtypes_span: ::candle_contracts::__private::TextSpan::new(87, 90),
                    shape: &[
                        ::candle_contracts::__private::DimSpec::Named(2u16),
                        ::candle_contracts::__private::DimSpec::Named(3u16),
                    ],
                    shape_span: ::candle_contracts::__private::TextSpan::new(90, 96),
                    values: ::core::option::Option::None,
                    contiguous: false,
                    note: ::core::option::Option::None,
                    sequence: ::core::option::Option::None,
                    mask: ::core::option::Option::None,
                },
                ::candle_contracts::__private::ClauseSpec {
                    subject: ::candle_contracts::__private::Subject::Derived(
                        "{self.weights.sum(1)?}",
                    ),
                    optional: false,
                    dtypes: ::candle_contracts::__private::DTypeSet::F32,
                    dtypes_span: ::candle_contracts::__private::TextSpan::new(121, 124),
                    shape: &[::candle_contracts::__private::DimSpec::Named(2u16)],
                    shape_span: ::candle_contracts::__private::TextSpan::new(124, 127),
                    values: ::core::option::Option::Some(
                        &::candle_contracts::__private::ValueSpec {
                            ranges: &[
                                ::candle_contracts::__private::RangeSpec {
                                    lo: ::core::option::Option::Some(
                                        ::candle_contracts::__private::BoundSpec::Inexact(
                                            0.999f64,
                                            ::candle_contracts::__private::Side::Above,
                                        ),
                                    ),
                                    hi: ::core::option::Option::Some(
                                        ::candle_contracts::__private::BoundSpec::Inexact(
                                            1.001f64,
                                            ::candle_contracts::__private::Side::Above,
                                        ),
                                    ),
                                    inclusive: true,
                                },
                            ],
                            ranges_span: ::candle_contracts::__private::TextSpan::new(
                                131,
                                144,
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
                    mask: ::core::option::Option::Some(::candle_contracts::__private::MaskSpec {
                        index: 1u16,
                        text: ::candle_contracts::__private::TextSpan::new(151, 171),
                    }),
                },
                ::candle_contracts::__private::ClauseSpec {
                    subject: ::candle_contracts::__private::Subject::Argument("labels"),
                    optional: false,
                    dtypes: ::candle_contracts::__private::DTypeSet::F32,
                    dtypes_span: ::candle_contracts::__private::TextSpan::new(180, 183),
                    shape: &[::candle_contracts::__private::DimSpec::Named(0u16)],
                    shape_span: ::candle_contracts::__private::TextSpan::new(183, 186),
                    values: ::core::option::Option::Some(
                        &::candle_contracts::__private::ValueSpec {
                            ranges: &[
                                ::candle_contracts::__private::RangeSpec {
                                    lo: ::core::option::Option::Some(
                                        ::candle_contracts::__private::BoundSpec::Float(0f64),
                                    ),
                                    hi: ::core::option::Option::Some(
                                        ::candle_contracts::__private::BoundSpec::Runtime(
                                            0u16,
                                            ::candle_contracts::__private::TextSpan::new(195, 216),
                                        ),
                                    ),
                                    inclusive: false,
                                },
                            ],
                            ranges_span: ::candle_contracts::__private::TextSpan::new(
                                190,
                                216,
                            ),
                            ignore: &[],
                            ignore_span: ::candle_contracts::__private::TextSpan::new(
                                0,
                                0,
                            ),
                            allow_all_ignored: ::candle_contracts::__private::AllowAll::No,
                            finite: false,
                            integral: true,
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
            text: "input_ids: i64[B, T] in 0..V where attention_mask\nattention_mask: u8[B, T]\nembeddings: f32[V, D]\n{self.weights.sum(1)?}: f32[V] in 0.999..=1.001 where {self.keep.ge(1u8)?}\nlabels: f32[B] in 0.0..{self.classes as f64} integral",
        };
        &__CC_SPEC
    };
    {
        #[allow(unused_imports)]
        use ::candle_contracts::__private::{
            ViaNoStructContract as _, ViaStructContract as _,
        };
        let _: ::candle_contracts::__private::NoStructContract = (&::candle_contracts::__private::StructProbe::<
            Self,
        >::NEW)
            .kind();
    }
    let mut __cc_guard = ::candle_contracts::__private::Guard::<
        4usize,
        0usize,
        1usize,
        0usize,
    >::new(__cc_spec);
    if let ::core::result::Result::Err(__cc_error) = __cc_guard
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
            let __cc_constants: [::candle_contracts::__private::ConstantProbe; 4usize] = [
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
                |__cc_v: ::core::primitive::u64| -> ::core::primitive::bool {
                    let mut __cc_s = 0;
                    match ::core::convert::TryFrom::try_from(__cc_v) {
                        ::core::result::Result::Ok(__cc_x) => __cc_s = __cc_x,
                        ::core::result::Result::Err(_) => return false,
                    }
                    match __cc_s {
                        T => true,
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
                        V => true,
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
                        D => true,
                        _ => false,
                    }
                },
            ];
            __cc_inputs
                .check(
                    &[
                        ::candle_contracts::__private::one(&input_ids),
                        ::candle_contracts::__private::one(&attention_mask),
                        ::candle_contracts::__private::one(&embeddings),
                        ::candle_contracts::__private::ClauseArg::One(
                            ::core::option::Option::None,
                        ),
                        ::candle_contracts::__private::one(&labels),
                    ],
                    &__cc_constants,
                    [],
                    || [::candle_contracts::__private::bound(&({ self.classes as f64 }))],
                )
        })
    {
        return ::core::result::Result::Err(
            ::candle_contracts::__private::into_error(
                ::candle_contracts::__private::in_method::<Self>(__cc_error),
            ),
        );
    }
    if __cc_guard.derives() {
        let __cc_derived_0 = &(self.weights.sum(1)?);
        let __cc_mask_1 = &(self.keep.ge(1u8)?);
        if let ::core::result::Result::Err(__cc_error) = __cc_guard
            .check_derived(
                &[
                    ::candle_contracts::__private::one(&input_ids),
                    ::candle_contracts::__private::one(&attention_mask),
                    ::candle_contracts::__private::one(&embeddings),
                    ::candle_contracts::__private::ClauseArg::One(
                        ::core::option::Option::None,
                    ),
                    ::candle_contracts::__private::one(&labels),
                ],
                &[::candle_contracts::__private::one(__cc_derived_0)],
                &[
                    ::candle_contracts::__private::one(&attention_mask),
                    ::candle_contracts::__private::one(__cc_mask_1),
                ],
            )
        {
            return ::core::result::Result::Err(
                ::candle_contracts::__private::into_error(
                    ::candle_contracts::__private::in_method::<Self>(__cc_error),
                ),
            );
        }
    }
    { embeddings.embedding(&input_ids.flatten_all()?) }
}
