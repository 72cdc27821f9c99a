//! A forecast as a caller asks for it, in the user's terms (preset names,
//! milliseconds, a list of cells), checked into [`ForecastOptions`].

use super::{AppPreset, BufferScheme, Compute, ForecastError, ForecastOptions, UsageModel};
use super::{APP_PRESETS, USAGE_PRESETS};

/// What a caller asks of a forecast.
#[derive(Clone, Copy, Debug, Default)]
pub struct ForecastRequest<'a> {
    /// A usage preset's name ([`USAGE_PRESETS`]), kept as given.
    pub usage: &'a str,
    /// A buffering scheme: the period of one buffer in ms and the number of
    /// buffers (both, or no scheme).
    pub period_ms: Option<f64>,
    pub buffers: Option<u32>,
    /// The scheme's compute time per buffer in ms.
    pub compute_ms: f64,
    /// A verdict for this application preset ([`APP_PRESETS`]) ...
    pub app: Option<&'a str>,
    /// ... or for every one.
    pub all_apps: bool,
    /// Only these cells, as an index list (`0,2`); `None` for all.
    pub cells: Option<&'a str>,
}

/// A request that names no preset, or an impossible scheme.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ForecastRequestError {
    #[error("unknown usage model '{0}' ({names})", names = names(USAGE_PRESETS.iter().map(|p| p.name)))]
    UnknownUsage(String),
    /// A period that is not positive, no buffer, or a negative compute time.
    #[error(
        "a buffering scheme needs a positive period, at least one buffer and a compute time of 0 or more"
    )]
    BadScheme,
    /// A scheme [`BufferScheme::new`] refuses.
    #[error("{0}")]
    Scheme(ForecastError),
    #[error("unknown application '{0}' ({names})", names = names(APP_PRESETS.iter().map(|p| p.name)))]
    UnknownApp(String),
    #[error("'{0}' is not a list of cell numbers")]
    BadCells(String),
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

impl ForecastOptions {
    /// The options of `request`, checked in the order usage model, scheme,
    /// applications, cells; the standard grid and tail options.
    pub fn from_request(request: &ForecastRequest<'_>) -> Result<Self, ForecastRequestError> {
        let usage = UsageModel::preset(request.usage)
            .ok_or_else(|| ForecastRequestError::UnknownUsage(request.usage.to_string()))?;
        let scheme = match (request.period_ms, request.buffers) {
            (Some(t), Some(n)) => {
                let c = request.compute_ms;
                if !(t > 0.0 && t.is_finite() && c >= 0.0 && n > 0) {
                    return Err(ForecastRequestError::BadScheme);
                }
                let compute = Compute::Nanos((c * 1e6).round() as u64);
                let scheme = BufferScheme::new((t * 1e6).round() as u64, n, compute);
                Some(scheme.map_err(ForecastRequestError::Scheme)?)
            }
            _ => None,
        };
        let apps: Vec<&'static AppPreset> = match request.app {
            _ if request.all_apps => APP_PRESETS.iter().collect(),
            Some(name) => vec![AppPreset::find(name)
                .ok_or_else(|| ForecastRequestError::UnknownApp(name.to_string()))?],
            None => Vec::new(),
        };
        let cells = match request.cells {
            None => None,
            Some(list) => Some(
                list.split(',')
                    .map(|s| s.trim().parse::<u32>())
                    .collect::<Result<_, _>>()
                    .map_err(|_| ForecastRequestError::BadCells(list.to_string()))?,
            ),
        };
        Ok(ForecastOptions {
            usage_name: request.usage.to_string(),
            usage,
            scheme,
            apps,
            cells,
            ..ForecastOptions::new()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ForecastRequest<'static> {
        ForecastRequest {
            usage: "continuous",
            ..ForecastRequest::default()
        }
    }

    #[test]
    fn a_request_becomes_options() {
        let o = ForecastOptions::from_request(&ForecastRequest {
            usage: "Office",
            period_ms: Some(1.5),
            buffers: Some(3),
            compute_ms: 0.25,
            app: Some("rt-audio"),
            cells: Some("0, 2"),
            ..request()
        })
        .unwrap();
        assert_eq!(o.usage_name, "Office");
        assert_eq!(o.usage, UsageModel::preset("office").unwrap());
        let s = o.scheme.unwrap();
        assert_eq!(
            (s.period_ns, s.buffers, s.compute),
            (1_500_000, 3, Compute::Nanos(250_000))
        );
        assert_eq!(o.apps.len(), 1);
        assert_eq!(o.cells, Some(vec![0, 2]));
        let all = ForecastOptions::from_request(&ForecastRequest {
            all_apps: true,
            app: Some("no-such-app"),
            ..request()
        })
        .unwrap();
        assert_eq!(all.apps.len(), APP_PRESETS.len());
    }

    #[test]
    fn bad_requests_say_what_is_wrong() {
        let err = |r: ForecastRequest<'_>| ForecastOptions::from_request(&r).unwrap_err();
        let e = err(ForecastRequest {
            usage: "holiday",
            ..request()
        });
        assert!(
            e.to_string()
                .starts_with("unknown usage model 'holiday' (office, "),
            "{e}"
        );
        for (t, n, c) in [
            (0.0, 2, 0.0),
            (f64::NAN, 2, 0.0),
            (1.0, 0, 0.0),
            (1.0, 2, -1.0),
        ] {
            let e = err(ForecastRequest {
                period_ms: Some(t),
                buffers: Some(n),
                compute_ms: c,
                ..request()
            });
            assert_eq!(e, ForecastRequestError::BadScheme);
        }
        let e = err(ForecastRequest {
            app: Some("kazoo"),
            ..request()
        });
        assert!(
            e.to_string().starts_with("unknown application 'kazoo' ("),
            "{e}"
        );
        let e = err(ForecastRequest {
            cells: Some("0,x"),
            ..request()
        });
        assert_eq!(e.to_string(), "'0,x' is not a list of cell numbers");
    }
}
