impl Scorer for Softmax {
    /// Scores the logits.
    ///
    ///# Contract
    ///
    ///```text
    ///logits: f32[N, C] finite
    ///```
    fn score<'life0, 'life1, 'async_trait>(
        &'life0 self,
        logits: &'life1 Tensor,
    ) -> ::core::pin::Pin<
        Box<
            dyn ::core::future::Future<
                Output = Result<Tensor>,
            > + ::core::marker::Send + 'async_trait,
        >,
    >
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        let __cc_spec: &'static ::candle_contracts::__private::ContractSpec = {
            static __CC_SPEC: ::candle_contracts::__private::ContractSpec = ::candle_contracts::__private::ContractSpec {
                function: "score",
                params: &["logits"],
                file: ::core::file!(),
                line: ::core::line!(),
                column: ::core::column!(),
                dims: &["N", "C"],
                values: &[],
                runs: &[],
                inputs: &[
                    ::candle_contracts::__private::ClauseSpec {
                        subject: ::candle_contracts::__private::Subject::Argument(
                            "logits",
                        ),
                        optional: false,
                        dtypes: ::candle_contracts::__private::DTypeSet::F32,
                        dtypes_span: ::candle_contracts::__private::TextSpan::new(8, 11),
                        shape: &[
                            ::candle_contracts::__private::DimSpec::Named(0u16),
                            ::candle_contracts::__private::DimSpec::Named(1u16),
                        ],
                        shape_span: ::candle_contracts::__private::TextSpan::new(11, 17),
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
                outputs: &[],
                relations: &[],
                same_device: true,
                text: "logits: f32[N, C] finite",
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
                        &[::candle_contracts::__private::one(&logits)],
                        &__cc_constants,
                        [],
                        || [],
                    )
            })
        {
            return ::std::boxed::Box::pin(async move {
                let __cc_value: Result<Tensor> = ::core::result::Result::Err(
                    ::candle_contracts::__private::into_error(
                        ::candle_contracts::__private::in_method::<Self>(__cc_error),
                    ),
                );
                __cc_value
            });
        }
        { Box::pin(async move { candle_nn::ops::softmax_last_dim(logits) }) }
    }
}
