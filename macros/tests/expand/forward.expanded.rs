impl Embedding {
    /// Looks the ids up.
    ///
    ///# Contract
    ///
    ///```text
    ///self.table: f32[V, D]
    ///ids: u32[B, T] in 0..{self.vocab_size}
    ///return: f32[B, T, D]
    ///T <= 512
    ///```
    fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        let __cc_spec: &'static ::candle_contracts::__private::ContractSpec = {
            static __CC_SPEC: ::candle_contracts::__private::ContractSpec = ::candle_contracts::__private::ContractSpec {
                function: "forward",
                params: &["ids"],
                file: ::core::file!(),
                line: ::core::line!(),
                column: ::core::column!(),
                dims: &["V", "D", "B", "T"],
                values: &[],
                runs: &[],
                inputs: &[
                    ::candle_contracts::__private::ClauseSpec {
                        subject: ::candle_contracts::__private::Subject::Field(
                            "self.table",
                        ),
                        optional: false,
                        dtypes: ::candle_contracts::__private::DTypeSet::F32,
                        dtypes_span: ::candle_contracts::__private::TextSpan::new(
                            12,
                            15,
                        ),
                        shape: &[
                            ::candle_contracts::__private::DimSpec::Named(0u16),
                            ::candle_contracts::__private::DimSpec::Named(1u16),
                        ],
                        shape_span: ::candle_contracts::__private::TextSpan::new(15, 21),
                        values: ::core::option::Option::None,
                        contiguous: false,
                        note: ::core::option::Option::None,
                        sequence: ::core::option::Option::None,
                        mask: ::core::option::Option::None,
                    },
                    ::candle_contracts::__private::ClauseSpec {
                        subject: ::candle_contracts::__private::Subject::Argument("ids"),
                        optional: false,
                        dtypes: ::candle_contracts::__private::DTypeSet::U32,
                        dtypes_span: ::candle_contracts::__private::TextSpan::new(
                            27,
                            30,
                        ),
                        shape: &[
                            ::candle_contracts::__private::DimSpec::Named(2u16),
                            ::candle_contracts::__private::DimSpec::Named(3u16),
                        ],
                        shape_span: ::candle_contracts::__private::TextSpan::new(30, 36),
                        values: ::core::option::Option::Some(
                            &::candle_contracts::__private::ValueSpec {
                                ranges: &[
                                    ::candle_contracts::__private::RangeSpec {
                                        lo: ::core::option::Option::Some(
                                            ::candle_contracts::__private::BoundSpec::Int(0i128),
                                        ),
                                        hi: ::core::option::Option::Some(
                                            ::candle_contracts::__private::BoundSpec::Runtime(
                                                0u16,
                                                ::candle_contracts::__private::TextSpan::new(43, 60),
                                            ),
                                        ),
                                        inclusive: false,
                                    },
                                ],
                                ranges_span: ::candle_contracts::__private::TextSpan::new(
                                    40,
                                    60,
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
                outputs: &[
                    ::candle_contracts::__private::ClauseSpec {
                        subject: ::candle_contracts::__private::Subject::Return,
                        optional: false,
                        dtypes: ::candle_contracts::__private::DTypeSet::F32,
                        dtypes_span: ::candle_contracts::__private::TextSpan::new(
                            69,
                            72,
                        ),
                        shape: &[
                            ::candle_contracts::__private::DimSpec::Named(2u16),
                            ::candle_contracts::__private::DimSpec::Named(3u16),
                            ::candle_contracts::__private::DimSpec::Named(1u16),
                        ],
                        shape_span: ::candle_contracts::__private::TextSpan::new(72, 81),
                        values: ::core::option::Option::None,
                        contiguous: false,
                        note: ::core::option::Option::None,
                        sequence: ::core::option::Option::None,
                        mask: ::core::option::Option::None,
                    },
                ],
                relations: &[
                    ::candle_contracts::__private::RelationSpec {
                        text: ::candle_contracts::__private::TextSpan::new(82, 90),
                        lhs: &[::candle_contracts::__private::ExprOp::Dim(3u16)],
                        op: ::candle_contracts::__private::CmpOp::Le,
                        rhs: &[::candle_contracts::__private::ExprOp::Lit(512u64)],
                        after_body: false,
                        binds: false,
                    },
                ],
                same_device: true,
                text: "self.table: f32[V, D]\nids: u32[B, T] in 0..{self.vocab_size}\nreturn: f32[B, T, D]\nT <= 512",
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
        let __cc_guard_in = &mut __cc_guard;
        let __cc_output = ::candle_contracts::__private::run_body(move || -> Result<
            Tensor,
        > {
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
                    let __cc_constants: [::candle_contracts::__private::ConstantProbe; 4usize] = [
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
                    ];
                    __cc_inputs
                        .check(
                            &[
                                ::candle_contracts::__private::one(&self.table),
                                ::candle_contracts::__private::one(&ids),
                            ],
                            &__cc_constants,
                            [],
                            || [
                                ::candle_contracts::__private::bound(&({ self.vocab_size })),
                            ],
                        )
                })
            {
                return ::core::result::Result::Err(
                    ::candle_contracts::__private::into_error(
                        ::candle_contracts::__private::in_method::<Self>(__cc_error),
                    ),
                );
            }
            {
                let (b, t) = ids.dims2()?;
                self.table.index_select(&ids.flatten_all()?, 0)?.reshape((b, t, ()))
            }
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
                ::candle_contracts::__private::into_error(
                    ::candle_contracts::__private::in_method::<Self>(__cc_error),
                ),
            );
        }
        __cc_output
    }
}
/// Returns `x`.
///
///# Contract
///
///```text
///x: f32[N] finite
///return: f32[N]
///```
async fn scale(x: &Tensor) -> Tensor {
    let __cc_spec: &'static ::candle_contracts::__private::ContractSpec = {
        static __CC_SPEC: ::candle_contracts::__private::ContractSpec = ::candle_contracts::__private::ContractSpec {
            function: "scale",
            params: &["x"],
            file: ::core::file!(),
            line: ::core::line!(),
            column: ::core::column!(),
            dims: &["N"],
            values: &[],
            runs: &[],
            inputs: &[
                ::candle_contracts::__private::ClauseSpec {
                    subject: ::candle_contracts::__private::Subject::Argument("x"),
                    optional: false,
                    dtypes: ::candle_contracts::__private::DTypeSet::F32,
                    dtypes_span: ::candle_contracts::__private::TextSpan::new(3, 6),
                    shape: &[::candle_contracts::__private::DimSpec::Named(0u16)],
                    shape_span: ::candle_contracts::__private::TextSpan::new(6, 9),
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
            ],
            outputs: &[
                ::candle_contracts::__private::ClauseSpec {
                    subject: ::candle_contracts::__private::Subject::Return,
                    optional: false,
                    dtypes: ::candle_contracts::__private::DTypeSet::F32,
                    dtypes_span: ::candle_contracts::__private::TextSpan::new(25, 28),
                    shape: &[::candle_contracts::__private::DimSpec::Named(0u16)],
                    shape_span: ::candle_contracts::__private::TextSpan::new(28, 31),
                    values: ::core::option::Option::None,
                    contiguous: false,
                    note: ::core::option::Option::None,
                    sequence: ::core::option::Option::None,
                    mask: ::core::option::Option::None,
                },
            ],
            relations: &[],
            same_device: true,
            text: "x: f32[N] finite\nreturn: f32[N]",
        };
        &__CC_SPEC
    };
    let mut __cc_guard = ::candle_contracts::__private::Guard::<
        1usize,
        0usize,
        0usize,
        0usize,
    >::new(__cc_spec);
    let __cc_guard_in = &mut __cc_guard;
    let __cc_output = async move {
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
                            N => true,
                            _ => false,
                        }
                    },
                ];
                __cc_inputs
                    .check(
                        &[::candle_contracts::__private::one(&x)],
                        &__cc_constants,
                        [],
                        || [],
                    )
            })
        {
            ::candle_contracts::__private::violated(__cc_error)
        }
        if false {
            let __cc_fake: ::core::option::Option<Tensor> = ::core::option::Option::None;
            if let ::core::option::Option::Some(__cc_fake) = __cc_fake {
                return __cc_fake;
            }
        }
        { x.clone() }
    }
        .await;
    if let ::core::result::Result::Err(__cc_error) = __cc_guard
        .check_output(|| [::candle_contracts::__private::one(&__cc_output)])
    {
        ::candle_contracts::__private::violated(__cc_error)
    }
    __cc_output
}
