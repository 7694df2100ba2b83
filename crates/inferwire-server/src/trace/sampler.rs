//! Which requests are traced, by OpenTelemetry's samplers (`OTEL_TRACES_SAMPLER`):
//! always on, always off, a ratio of trace ids, or any of them under parent-based, which
//! follows a caller's `sampled` flag and asks the inner sampler only for new traces.

use super::context::SpanContext;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    AlwaysOn,
    AlwaysOff,
    /// The share of traces kept, 0 to 1.
    Ratio(f64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampler {
    pub rule: Rule,
    pub parent_based: bool,
    /// Trace ids whose low 8 bytes, read as a big-endian number, are below this are
    /// kept (`Rule::Ratio`).
    bound: u64,
}

impl Sampler {
    /// A sampler by OpenTelemetry's name (`always_on`, `parentbased_traceidratio`, ...)
    /// and argument (the ratio, for the ratio samplers).
    pub fn by_name(name: &str, arg: f64) -> Result<Self, String> {
        let (parent_based, inner) = match name.strip_prefix("parentbased_") {
            Some(inner) => (true, inner),
            None => (false, name),
        };
        let rule = match inner {
            "always_on" => Rule::AlwaysOn,
            "always_off" => Rule::AlwaysOff,
            "traceidratio" if (0.0..=1.0).contains(&arg) => Rule::Ratio(arg),
            "traceidratio" => {
                return Err(format!(
                    "trace_sampler_arg: {arg} is not a ratio from 0 to 1"
                ))
            }
            _ => {
                return Err(format!(
                    "trace_sampler: {name:?} is not always_on, always_off, traceidratio or \
                     parentbased_ of one of them"
                ))
            }
        };
        let bound = match rule {
            Rule::Ratio(r) if r >= 1.0 => u64::MAX,
            // The ratio of the id space below the bound (as OpenTelemetry's SDKs do).
            Rule::Ratio(r) => (r * u64::MAX as f64) as u64,
            _ => 0,
        };
        Ok(Self {
            rule,
            parent_based,
            bound,
        })
    }

    /// Whether nothing can ever be sampled: then no tracer is built at all.
    pub fn never(&self) -> bool {
        self.rule == Rule::AlwaysOff && !self.parent_based
    }

    /// Whether a span in trace `trace_id` is recorded; `parent`: the caller's context.
    pub fn sample(&self, parent: Option<&SpanContext>, trace_id: &[u8; 16]) -> bool {
        if let (true, Some(p)) = (self.parent_based, parent) {
            return p.sampled();
        }
        match self.rule {
            Rule::AlwaysOn => true,
            Rule::AlwaysOff => false,
            Rule::Ratio(_) => {
                let mut low = [0u8; 8];
                low.copy_from_slice(&trace_id[8..]);
                let n = u64::from_be_bytes(low);
                self.bound == u64::MAX || n < self.bound
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(flags: u8) -> SpanContext {
        SpanContext {
            trace_id: [1; 16],
            span_id: [2; 8],
            flags,
        }
    }

    #[test]
    fn parent_based_follows_the_caller() {
        let s = Sampler::by_name("parentbased_always_off", 0.0).unwrap();
        assert!(s.sample(Some(&ctx(1)), &[0; 16]));
        assert!(!s.sample(Some(&ctx(0)), &[0; 16]));
        assert!(!s.sample(None, &[0; 16]));
        assert!(!s.never());
        let s = Sampler::by_name("always_on", 0.0).unwrap();
        assert!(s.sample(Some(&ctx(0)), &[0; 16]));
        assert!(Sampler::by_name("always_off", 0.0).unwrap().never());
    }

    #[test]
    fn ratio_keeps_its_share() {
        let s = Sampler::by_name("traceidratio", 0.25).unwrap();
        let kept = (0u64..4000)
            .filter(|i| {
                let mut id = [0u8; 16];
                id[8..].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
                s.sample(None, &id)
            })
            .count();
        assert!((800..1200).contains(&kept), "{kept}");
        assert!(Sampler::by_name("traceidratio", 1.5).is_err());
        assert!(Sampler::by_name("jaeger_remote", 1.0).is_err());
    }
}
