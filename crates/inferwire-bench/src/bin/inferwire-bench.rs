//! The standalone load generator: `inferwire-bench attack|payload|suite ...`.
fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    if let Some(first) = args.first_mut() {
        *first = "inferwire-bench".into();
    }
    std::process::exit(inferwire_bench::cli::main(args));
}
