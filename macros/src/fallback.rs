//! What to emit when the contract or the function is wrong: the errors, and the function exactly
//! as written, so callers and rust-analyzer see no cascade of follow-on errors.

use proc_macro2::TokenStream;
use quote::quote;

pub fn emit(errors: syn::Error, original: TokenStream) -> TokenStream {
    let errors = errors.to_compile_error();
    quote! {
        #errors
        #original
    }
}

/// For `check!`: the errors, then a value of the macro's type.
pub fn emit_check(errors: syn::Error) -> TokenStream {
    let errors = errors.to_compile_error();
    quote! {
        {
            #errors
            ::core::result::Result::<(), ::candle_contracts::ContractError>::Ok(())
        }
    }
}
